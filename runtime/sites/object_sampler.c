#include "runtime/sites/object_sampler.h"

#include <stddef.h>
#include <string.h>

#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/frames.h"
#include "runtime/python/gil.h"
#include "runtime/sites/sampler.h"

#define P roundtrim_py

/* PyMemAllocatorEx, a stable layout since 3.5, and its object domain. */
struct py_mem_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
};
#define PY_MEM_DOMAIN_OBJ 2

/* Short: the worker holds the round lock while it waits. */
#define ATTACH_GIL_WAIT_MS 100
#define ATTACH_RUN_WAIT_MS 1000

/* The allocator wrapped, our wrapper's ctx; written once, under the GIL, before the wrapper is
 * put in place, and never changed: the wrapper stays for the process's life (the library is
 * never unloaded), since tracemalloc or another tool may have wrapped it in turn. */
static struct py_mem_allocator wrapped;
/* Written by the GIL helper's job or the worker, read by the worker. */
static const char *skipped = "not_yet";
static bool decided; /* skipped is final */

static void decide(const char *why)
{
    __atomic_store_n(&skipped, why, __ATOMIC_RELEASE);
    __atomic_store_n(&decided, true, __ATOMIC_RELEASE);
}

/* Requests of up to 512 bytes are pymalloc's, which malloc never sees: those are counted here
 * (rounded to pymalloc's 16 bytes), with the malloc sampler held off for the malloc a debug
 * layer's padding may still lead to. Larger ones pymalloc passes to malloc, whose sampler
 * counts them as it did before the wrapper (the same stacks: roundtrim's frames are left out). */
#define SMALL_REQUEST 512u

static void *obj_malloc(void *ctx, size_t n)
{
    const struct py_mem_allocator *w = ctx;
    if (n > SMALL_REQUEST)
        return w->malloc(w->ctx, n);
    bool outer = roundtrim_in_object_allocator;
    roundtrim_in_object_allocator = true;
    void *p = w->malloc(w->ctx, n);
    roundtrim_in_object_allocator = outer;
    if (p)
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15);
    return p;
}

static void *obj_calloc(void *ctx, size_t nelem, size_t elsize)
{
    const struct py_mem_allocator *w = ctx;
    size_t n;
    if (__builtin_mul_overflow(nelem, elsize, &n) || n > SMALL_REQUEST)
        return w->calloc(w->ctx, nelem, elsize);
    bool outer = roundtrim_in_object_allocator;
    roundtrim_in_object_allocator = true;
    void *p = w->calloc(w->ctx, nelem, elsize);
    roundtrim_in_object_allocator = outer;
    if (p)
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15);
    return p;
}

static void *obj_realloc(void *ctx, void *ptr, size_t n)
{
    const struct py_mem_allocator *w = ctx;
    /* Forgotten before it may move, as realloc does for malloc's blocks. */
    if (ptr && roundtrim_sample_maybe(ptr))
        roundtrim_sample_freed(ptr);
    if (n > SMALL_REQUEST)
        return w->realloc(w->ctx, ptr, n);
    bool outer = roundtrim_in_object_allocator;
    roundtrim_in_object_allocator = true;
    void *p = w->realloc(w->ctx, ptr, n);
    roundtrim_in_object_allocator = outer;
    if (p)
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15);
    return p;
}

static void obj_free(void *ctx, void *ptr)
{
    const struct py_mem_allocator *w = ctx;
    if (ptr && roundtrim_sample_maybe(ptr))
        roundtrim_sample_freed(ptr);
    w->free(w->ctx, ptr);
}

/* Under the GIL, in the main interpreter (the helper thread). Only the allocators CPython
 * names are wrapped: pymalloc, alone or under the debug hooks (-X dev), which forward to it
 * with their own ctx as any wrapper does. */
static const char *attach_job(struct roundtrim_py_result *out)
{
    (void)out;
    const char *why = NULL;
    const char *name = P.Mem_GetCurrentAllocatorName();
    if (!name) {
        why = "allocator_custom";
    } else if (strcmp(name, "pymalloc") != 0 && strcmp(name, "pymalloc_debug") != 0) {
        why = "malloc";
    } else {
        P.Mem_GetAllocator(PY_MEM_DOMAIN_OBJ, &wrapped);
        struct py_mem_allocator mine = {&wrapped, obj_malloc, obj_calloc, obj_realloc, obj_free};
        P.Mem_SetAllocator(PY_MEM_DOMAIN_OBJ, &mine);
    }
    decide(why);
    return why;
}

void roundtrim_python_objects_attach(void)
{
    if (__atomic_load_n(&decided, __ATOMIC_ACQUIRE) || roundtrim_sampler_skipped())
        return;
    if (!roundtrim_python_present()) { /* an embedder may start one later */
        if (!roundtrim_python_loaded())
            __atomic_store_n(&skipped, "not_python", __ATOMIC_RELEASE);
        return;
    }
    const char *why = roundtrim_python_frames_unavailable();
    if (why) /* the lines could not be named */
        decide(why);
    else if (!P.Mem_GetAllocator || !P.Mem_SetAllocator || !P.Mem_GetCurrentAllocatorName)
        decide("python_api");
    else {
        struct roundtrim_py_result res;
        roundtrim_py_with_gil(attach_job, &res, ATTACH_GIL_WAIT_MS, ATTACH_RUN_WAIT_MS);
    }
}

const char *roundtrim_python_objects_skipped(void)
{
    return __atomic_load_n(&skipped, __ATOMIC_ACQUIRE);
}
