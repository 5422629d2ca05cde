#include "runtime/python/cupy_pools.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/core/clock.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/track.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/gil.h"

#define P roundtrim_py

/* A reading waits for the GIL as briefly as PyTorch's does (the round's record waits on it). */
#define CUPY_READ_GIL_WAIT_MS 200

static bool seen;

bool roundtrim_python_cupy_seen(void)
{
    return __atomic_load_n(&seen, __ATOMIC_RELAXED);
}

/* The program's cupy (borrowed), in the program's CUDA context; NULL and why not. The pools are
 * per device: entering the context of the device the program uses makes it the helper thread's
 * current device, as CuPy's calls expect, without creating a context anywhere. */
static py_object *cupy_entered(struct roundtrim_cuda_scope *scope, enum roundtrim_skip *why)
{
    py_object *cupy = roundtrim_py_sys_module("cupy");
    if (!cupy) {
        *why = RT_SKIP_no_cupy;
        return NULL;
    }
    __atomic_store_n(&seen, true, __ATOMIC_RELAXED);
    *why = roundtrim_cuda_context_enter(scope);
    return *why ? NULL : cupy;
}

static enum roundtrim_skip cached_job(struct roundtrim_py_result *out)
{
    struct roundtrim_cuda_scope scope;
    enum roundtrim_skip why;
    py_object *cupy = cupy_entered(&scope, &why);
    if (!cupy)
        return why;
    py_object *pool = roundtrim_py_call_method(cupy, "get_default_memory_pool");
    bool ok = pool && roundtrim_py_call_bytes(pool, "free_bytes", &out->bytes);
    if (pool)
        P.DecRef(pool);
    roundtrim_cuda_context_leave(&scope);
    P.Err_Clear();
    return ok ? RT_SKIP_NONE : RT_SKIP_failed;
}

static enum roundtrim_skip free_blocks_job(struct roundtrim_py_result *out)
{
    if (roundtrim_cuda_capture_active())
        return RT_SKIP_cuda_capture; /* freeing blocks may synchronize: a capture would be broken */
    struct roundtrim_cuda_scope scope;
    enum roundtrim_skip why;
    py_object *cupy = cupy_entered(&scope, &why);
    if (!cupy)
        return why;
    uint64_t t0 = roundtrim_now_us();
    bool ok = true;
    static const char *const getters[] = {"get_default_memory_pool",
                                          "get_default_pinned_memory_pool"};
    for (size_t i = 0; i < sizeof getters / sizeof getters[0]; i++) {
        py_object *pool = roundtrim_py_call_method(cupy, getters[i]);
        py_object *r = pool ? roundtrim_py_call_method(pool, "free_all_blocks") : NULL;
        ok = ok && r;
        if (r)
            P.DecRef(r);
        if (pool)
            P.DecRef(pool);
    }
    out->us = roundtrim_now_us() - t0;
    roundtrim_cuda_context_leave(&scope);
    P.Err_Clear();
    return ok ? RT_SKIP_NONE : RT_SKIP_failed;
}

static enum roundtrim_skip run(roundtrim_py_job job, struct roundtrim_py_result *res,
                               unsigned gil_wait_ms)
{
    if (!roundtrim_python_present())
        return roundtrim_python_loaded() ? RT_SKIP_no_interpreter : RT_SKIP_no_python;
    return roundtrim_py_with_gil(job, res, gil_wait_ms,
                                 (unsigned)roundtrim_config()->py_job_wait_ms);
}

enum roundtrim_skip roundtrim_python_cupy_cached(uint64_t *cached)
{
    struct roundtrim_py_result res;
    enum roundtrim_skip why = run(cached_job, &res, CUPY_READ_GIL_WAIT_MS);
    if (!why)
        *cached = res.bytes;
    return why;
}

enum roundtrim_skip roundtrim_python_cupy_free_blocks(uint64_t *us)
{
    if (roundtrim_cuda_capture_active())
        return RT_SKIP_cuda_capture;
    struct roundtrim_py_result res;
    enum roundtrim_skip why = run(free_blocks_job, &res, ROUNDTRIM_PY_GIL_WAIT_MS);
    if (!why)
        *us = res.us;
    return why;
}

enum roundtrim_skip roundtrim_python_cupy_news(enum roundtrim_skip why)
{
    switch (why) {
    case RT_SKIP_no_python:
    case RT_SKIP_no_interpreter:
    case RT_SKIP_no_cupy:
    case RT_SKIP_no_device:
    case RT_SKIP_no_context:
        return RT_SKIP_NONE;
    default:
        return why;
    }
}
