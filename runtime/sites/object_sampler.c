#include "runtime/sites/object_sampler.h"

#include <stddef.h>
#include <string.h>

#include "policy/skip_reason.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/frames.h"
#include "runtime/python/gil.h"
#include "runtime/sites/sampler.h"
#include "runtime/boundary/boundary.h"

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

/* The wrappers put in place, each with the allocator it wraps as its ctx: written once, under
 * the GIL, before that wrapper is put in place, and never changed, since another tool may have
 * saved it as the allocator it calls in turn (the library is never unloaded). A later wrapper is
 * put in place when a tool installed its own allocator past ours, calling the one it found
 * before ours: the objects ours sampled may then be freed where no wrapper sees it. */
#define WRAPPERS_MAX 8
static struct py_mem_allocator wrapped[WRAPPERS_MAX];
/* How many are in use; the newest (its number, 1-based) is the one whose samples count. */
static uint32_t wrappers;
static uint64_t wrapped_since; /* the round in progress when the newest was put in place */
/* Written by the GIL helper's job or the worker, read by the worker. */
static enum roundtrim_skip skipped = RT_SKIP_not_yet;
static bool decided; /* skipped is final, or a wrapper is in place */

/* The allocator found on top at the last check that reached ours through it. */
static struct py_mem_allocator chain_top;
/* Set by the check job's probe call, in the helper thread only. */
static __thread bool probing, probe_reached;

static void decide(enum roundtrim_skip why)
{
    __atomic_store_n(&skipped, why, __ATOMIC_RELEASE);
    __atomic_store_n(&decided, true, __ATOMIC_RELEASE);
}

static uint32_t wrapper_number(const struct py_mem_allocator *w)
{
    return (uint32_t)(w - wrapped) + 1;
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
    if (__builtin_expect(probing, 0)) {
        probe_reached = wrapper_number(w) == __atomic_load_n(&wrappers, __ATOMIC_RELAXED);
        return w->malloc(w->ctx, n);
    }
    bool outer = roundtrim_in_object_allocator;
    roundtrim_in_object_allocator = true;
    void *p = w->malloc(w->ctx, n);
    roundtrim_in_object_allocator = outer;
    if (p)
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15, wrapper_number(w));
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
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15, wrapper_number(w));
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
        roundtrim_sample_object(p, (n + 15) & ~(size_t)15, wrapper_number(w));
    return p;
}

static void obj_free(void *ctx, void *ptr)
{
    const struct py_mem_allocator *w = ctx;
    if (ptr && roundtrim_sample_maybe(ptr))
        roundtrim_sample_freed(ptr);
    w->free(w->ctx, ptr);
}

/* Puts a wrapper of `under` in place (under the GIL); false when all are used. */
static bool wrap(const struct py_mem_allocator *under)
{
    uint32_t n = __atomic_load_n(&wrappers, __ATOMIC_RELAXED);
    if (n == WRAPPERS_MAX)
        return false;
    wrapped[n] = *under;
    struct py_mem_allocator mine = {&wrapped[n], obj_malloc, obj_calloc, obj_realloc, obj_free};
    __atomic_store_n(&wrapped_since, roundtrim_boundaries_seen() + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&wrappers, n + 1, __ATOMIC_RELEASE);
    P.Mem_SetAllocator(PY_MEM_DOMAIN_OBJ, &mine);
    chain_top = mine;
    return true;
}

/* Under the GIL, in the main interpreter (the helper thread). Only the allocators CPython
 * names are wrapped: pymalloc, alone or under the debug hooks (-X dev), which forward to it
 * with their own ctx as any wrapper does. */
static enum roundtrim_skip attach_job(struct roundtrim_py_result *out)
{
    (void)out;
    enum roundtrim_skip why = RT_SKIP_NONE;
    const char *name = P.Mem_GetCurrentAllocatorName();
    if (!name) {
        why = RT_SKIP_allocator_custom;
    } else if (strcmp(name, "pymalloc") != 0 && strcmp(name, "pymalloc_debug") != 0) {
        why = RT_SKIP_malloc;
    } else {
        struct py_mem_allocator under;
        P.Mem_GetAllocator(PY_MEM_DOMAIN_OBJ, &under);
        wrap(&under);
    }
    decide(why);
    return why ? RT_SKIP_failed : RT_SKIP_NONE;
}

/* Under the GIL: whether the object allocator's calls still reach our newest wrapper. The one on
 * top is ours, or was found to call ours at the last check; else one object is allocated and
 * freed through it. When ours is not reached (a tool put its allocator in place, calling the
 * one it saved before ours), a new wrapper is put on top: the objects sampled before are no
 * longer counted (their frees may have gone past every wrapper), the ones sampled from now on
 * are. Once all wrappers are used, objects are no longer counted: allocator_replaced. */
static enum roundtrim_skip check_job(struct roundtrim_py_result *out)
{
    (void)out;
    struct py_mem_allocator top;
    P.Mem_GetAllocator(PY_MEM_DOMAIN_OBJ, &top);
    uint32_t n = __atomic_load_n(&wrappers, __ATOMIC_RELAXED);
    if ((top.malloc == obj_malloc && top.ctx == &wrapped[n - 1]) ||
        memcmp(&top, &chain_top, sizeof top) == 0)
        return RT_SKIP_NONE;
    probing = true;
    probe_reached = false;
    void *p = top.malloc(top.ctx, 1);
    probing = false;
    if (p)
        top.free(top.ctx, p);
    if (!p || probe_reached) {
        chain_top = top;
        return RT_SKIP_NONE;
    }
    if (!wrap(&top))
        decide(RT_SKIP_allocator_replaced);
    return RT_SKIP_NONE;
}

void roundtrim_python_objects_attach(void)
{
    if (roundtrim_sampler_skipped())
        return;
    struct roundtrim_py_result res;
    if (__atomic_load_n(&decided, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&skipped, __ATOMIC_ACQUIRE) == RT_SKIP_NONE &&
            roundtrim_python_present())
            roundtrim_py_with_gil(check_job, &res, ATTACH_GIL_WAIT_MS, ATTACH_RUN_WAIT_MS);
        return;
    }
    if (!roundtrim_python_present()) { /* an embedder may start one later */
        if (!roundtrim_python_loaded())
            __atomic_store_n(&skipped, RT_SKIP_no_python, __ATOMIC_RELEASE);
        return;
    }
    enum roundtrim_skip why = roundtrim_python_frames_unavailable();
    if (why) /* the lines could not be named */
        decide(why);
    else if (!P.Mem_GetAllocator || !P.Mem_SetAllocator || !P.Mem_GetCurrentAllocatorName)
        decide(RT_SKIP_python_api);
    else
        roundtrim_py_with_gil(attach_job, &res, ATTACH_GIL_WAIT_MS, ATTACH_RUN_WAIT_MS);
}

bool roundtrim_python_object_sample_counts(uint32_t wrapper)
{
    return wrapper == 0 || (wrapper == __atomic_load_n(&wrappers, __ATOMIC_ACQUIRE) &&
                            __atomic_load_n(&skipped, __ATOMIC_ACQUIRE) == RT_SKIP_NONE);
}

uint64_t roundtrim_python_objects_since(void)
{
    return __atomic_load_n(&skipped, __ATOMIC_ACQUIRE) == RT_SKIP_NONE
               ? __atomic_load_n(&wrapped_since, __ATOMIC_RELAXED)
               : 0;
}

enum roundtrim_skip roundtrim_python_objects_skipped(void)
{
    return __atomic_load_n(&skipped, __ATOMIC_ACQUIRE);
}
