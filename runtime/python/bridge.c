/* The embedded CPython interpreter: found at run time, driven from roundtrim's worker through a
 * helper thread that takes the GIL (runtime/python/gil.h), hooked through an audit hook
 * (runtime/python/round_hook.h). */
#include "runtime/python/bridge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/clock.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/track.h"
#include "runtime/python/api.h"
#include "runtime/python/arenas.h"
#include "runtime/python/gil.h"
#include "runtime/python/round_hook.h"

#define P roundtrim_py

/* How long reading PyTorch's cache figures waits for the GIL. */
#define TORCH_MEMORY_GIL_WAIT_MS 200

/* How long the worker waits for the job once it has the GIL: ROUNDTRIM_PY_JOB_WAIT_MS. */
static unsigned job_wait_ms(void)
{
    return (unsigned)roundtrim_config()->py_job_wait_ms;
}

/* gc.collect() when gc was disabled: before 3.10 there is no C switch, only the gc module,
 * which the program imported itself to disable gc. Borrowed module, no import. */
static py_ssize collect_disabled_pre310(void)
{
    py_object *gc = roundtrim_py_sys_module("gc");
    py_object *fn = gc && P.Long_AsLong ? P.Object_GetAttrString(gc, "collect") : NULL;
    py_object *n = fn ? P.Object_CallObject(fn, NULL) : NULL;
    py_ssize count = n ? (py_ssize)P.Long_AsLong(n) : -1;
    if (n)
        P.DecRef(n);
    if (fn)
        P.DecRef(fn);
    return count;
}

/* What a collection freed in pymalloc's blocks, in bytes: its arenas stay mapped while their
 * pools are reused, so their size says nothing of small objects freed. Each block counts the
 * arenas' mean bytes per allocated block before the collection (16 to 512, pymalloc's sizes). */
static uint64_t small_objects_freed(py_ssize before, py_ssize after)
{
    uint64_t arenas = 0;
    if (before <= 0 || after >= before || roundtrim_python_arena_bytes(&arenas) || !arenas)
        return 0;
    uint64_t per_block = arenas / (uint64_t)before;
    per_block = per_block < 16 ? 16 : per_block > 512 ? 512 : per_block;
    return (uint64_t)(before - after) * per_block;
}

static enum roundtrim_skip gc_job_run(struct roundtrim_py_result *out)
{
    /* PyGC_Collect does nothing while gc is disabled; gc.collect() collects regardless, and
     * programs that turn automatic gc off are the ones with most cyclic garbage. The switch is
     * flipped and restored under the GIL. A finalizer run by the collection that releases the
     * GIL lets other Python threads run meanwhile, and they would see gc enabled until it ends
     * (an automatic collection they trigger then is harmless: ours is running anyway). */
    bool off = P.GC_IsEnabled && !P.GC_IsEnabled();
    if (off)
        P.GC_Enable();
    py_ssize blocks = P.GetAllocatedBlocks ? P.GetAllocatedBlocks() : 0;
    uint64_t t0 = roundtrim_now_us();
    py_ssize n = P.GC_Collect();
    if (!P.GC_IsEnabled && n == 0) {
        py_ssize more = collect_disabled_pre310(); /* -1: no gc module, gc was on after all */
        n = more > 0 ? more : n;
    }
    out->us = roundtrim_now_us() - t0;
    out->bytes = small_objects_freed(blocks, P.GetAllocatedBlocks ? P.GetAllocatedBlocks() : 0);
    if (off)
        P.GC_Disable();
    if (P.Err_Occurred())
        P.Err_Clear();
    if (n < 0)
        return RT_SKIP_failed;
    out->count = (uint64_t)n;
    return RT_SKIP_NONE;
}

/* torch.cuda.<name>() (new reference) or NULL. */
static py_object *call_torch_cuda(py_object *cuda, const char *name)
{
    return roundtrim_py_call_method(cuda, name);
}

/* torch.cuda (borrowed) when the program imported torch and initialized CUDA itself; else NULL
 * and why not. */
static py_object *torch_cuda_ready(enum roundtrim_skip *why)
{
    /* Read only: the program's own modules, never an import. */
    py_object *torch = roundtrim_py_sys_module("torch");
    py_object *cuda = torch ? roundtrim_py_sys_module("torch.cuda") : NULL;
    *why = RT_SKIP_no_torch;
    if (!cuda)
        return NULL;
    /* is_initialized() never initializes CUDA, and is false in a child forked after CUDA
     * started (where empty_cache must not run). */
    py_object *init = call_torch_cuda(cuda, "is_initialized");
    int on = init ? P.Object_IsTrue(init) : -1;
    if (init)
        P.DecRef(init);
    if (on != 1) {
        P.Err_Clear();
        *why = on == 0 ? RT_SKIP_cuda_not_initialized : RT_SKIP_failed;
        return NULL;
    }
    *why = RT_SKIP_NONE;
    return cuda;
}

static enum roundtrim_skip torch_job_run(struct roundtrim_py_result *out)
{
    enum roundtrim_skip why;
    py_object *cuda = torch_cuda_ready(&why);
    if (!cuda)
        return why;
    /* empty_cache synchronizes the device, which invalidates a graph capture in progress on
     * any stream. Checked again here, right before the call: the helper may have waited for the
     * GIL since the worker checked. PyTorch's own is_current_stream_capturing() sees only its
     * current stream; the driver hooks count every capture in the process. */
    if (roundtrim_cuda_capture_active())
        return RT_SKIP_cuda_capture;
    /* This helper thread has no current context: the runtime would create one on device 0. One
     * call releases every device's cache (the native allocator walks all of them; the
     * cudaMallocAsync one switches devices itself), so one device of the program's suffices. */
    struct roundtrim_cuda_scope scope;
    why = roundtrim_cuda_context_enter(&scope);
    if (why)
        return why;
    uint64_t t0 = roundtrim_now_us();
    py_object *r = call_torch_cuda(cuda, "empty_cache");
    out->us = roundtrim_now_us() - t0;
    roundtrim_cuda_context_leave(&scope);
    if (!r) {
        P.Err_Clear();
        return RT_SKIP_failed;
    }
    P.DecRef(r);
    return RT_SKIP_NONE;
}

static enum roundtrim_skip absent(void);

/* The caching allocator's figures: count = allocated (tensors alive), bytes = reserved. Counters
 * of PyTorch's own, read without a device call; only where the program initialized CUDA. */
static enum roundtrim_skip torch_memory_job_run(struct roundtrim_py_result *out)
{
    enum roundtrim_skip why;
    py_object *cuda = torch_cuda_ready(&why);
    if (!cuda)
        return why;
    if (!roundtrim_py_call_bytes(cuda, "memory_allocated", &out->count) ||
        !roundtrim_py_call_bytes(cuda, "memory_reserved", &out->bytes))
        return RT_SKIP_failed;
    /* The cudaMallocAsync backend's reserve is the driver's default pool, which the pool
     * readings count already: PyTorch then keeps no cache of its own. */
    py_object *backend = call_torch_cuda(cuda, "get_allocator_backend");
    const char *name = backend && P.Unicode_AsUTF8 ? P.Unicode_AsUTF8(backend) : NULL;
    if (name && strcmp(name, "cudaMallocAsync") == 0)
        out->bytes = out->count;
    if (backend)
        P.DecRef(backend);
    P.Err_Clear();
    return RT_SKIP_NONE;
}

enum roundtrim_skip roundtrim_python_torch_news(enum roundtrim_skip why)
{
    switch (why) {
    case RT_SKIP_no_python:
    case RT_SKIP_no_interpreter:
    case RT_SKIP_no_torch:
    case RT_SKIP_cuda_not_initialized:
        return RT_SKIP_NONE;
    default:
        return why;
    }
}

enum roundtrim_skip roundtrim_python_torch_memory(uint64_t *allocated, uint64_t *reserved)
{
    struct roundtrim_py_result res;
    if (!roundtrim_python_present())
        return absent();
    /* A reading, not a cleanup: the round's record waits for it only briefly when the program
     * holds the GIL in C code ("gil_timeout": device_cached is then said unknown). */
    enum roundtrim_skip why =
        roundtrim_py_with_gil(torch_memory_job_run, &res, TORCH_MEMORY_GIL_WAIT_MS, job_wait_ms());
    if (why)
        return why;
    *allocated = res.count;
    *reserved = res.bytes;
    return RT_SKIP_NONE;
}

bool roundtrim_python_loaded(void)
{
    return roundtrim_py_resolve();
}

bool roundtrim_python_present(void)
{
    return roundtrim_py_resolve() && P.IsInitialized();
}

bool roundtrim_python_found(void)
{
    return __atomic_load_n(&P.found, __ATOMIC_ACQUIRE);
}

void roundtrim_python_exiting(void)
{
    /* No lookup here (a failed dlsym allocates, and _exit may come from a signal handler): a
     * process whose interpreter was never found has no job to give up. */
    if (roundtrim_python_found())
        roundtrim_py_gil_exiting();
}

void roundtrim_python_exec(bool begun)
{
    if (roundtrim_python_found())
        roundtrim_py_gil_exec(begun);
}

void roundtrim_python_finalize_begin(void)
{
    if (roundtrim_python_found() && P.IsInitialized())
        roundtrim_py_gil_interpreter_ending();
}

void roundtrim_python_finalize_end(void)
{
    if (roundtrim_python_found())
        roundtrim_py_gil_interpreter_ended();
}

static enum roundtrim_skip absent(void)
{
    if (!roundtrim_python_loaded())
        return RT_SKIP_no_python;
    /* No interpreter runs now: one that finalized unseen by roundtrim_python_finalize_end (a
     * Py_Main or Py_RunMain of an embedder) is gone, and the next one gets jobs again. */
    roundtrim_py_gil_interpreter_ended();
    return RT_SKIP_no_interpreter;
}

static uint64_t gc_small_freed; /* the last collection's, in bytes */

enum roundtrim_skip roundtrim_python_gc(uint64_t *collected, uint64_t *us)
{
    gc_small_freed = 0;
    struct roundtrim_py_result res;
    if (!roundtrim_python_present())
        return absent();
    enum roundtrim_skip why =
        roundtrim_py_with_gil(gc_job_run, &res, ROUNDTRIM_PY_GIL_WAIT_MS, job_wait_ms());
    if (why)
        return why;
    *collected = res.count;
    *us = res.us;
    gc_small_freed = res.bytes;
    return RT_SKIP_NONE;
}

uint64_t roundtrim_python_gc_small_freed(void)
{
    return gc_small_freed;
}

enum roundtrim_skip roundtrim_python_torch_empty_cache(uint64_t *us)
{
    struct roundtrim_py_result res;
    if (!roundtrim_python_present())
        return absent();
    /* Not even queued during a capture: no wait for the GIL for nothing. */
    if (roundtrim_cuda_capture_active())
        return RT_SKIP_cuda_capture;
    enum roundtrim_skip why =
        roundtrim_py_with_gil(torch_job_run, &res, ROUNDTRIM_PY_GIL_WAIT_MS, job_wait_ms());
    if (why)
        return why;
    *us = res.us;
    return RT_SKIP_NONE;
}

bool roundtrim_python_init(const char *hook_spec)
{
    /* Not Python (yet): nothing to hook; gc looks again at each cleanup, for programs that load
     * libpython later. Warnings about the spec are only for Python processes: shells and
     * launchers inherit the variable too. */
    if (!roundtrim_py_resolve())
        return false;
    roundtrim_py_hooks_init(hook_spec);
    return true;
}
