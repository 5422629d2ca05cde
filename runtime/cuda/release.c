/* Pool trims on the worker thread, each device's inside its primary context
 * (runtime/cuda/context.c), never while the program captures a stream graph. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/release.h"

#include "runtime/core/settings.h"

#include "runtime/cuda/account.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"

/* Capture errors (900..908): a synchronize refused because a capture runs. */
static bool capture_error(CUresult rc)
{
    return rc >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
           rc <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

/* Trims one pool to zero; adds what its reserve shrank by. Not when a capture has begun. */
static bool trim_one(CUmemoryPool pool, uint64_t *released)
{
    __typeof__(&cuMemPoolGetAttribute) get_attr = ROUNDTRIM_CUDA_CALL(cuMemPoolGetAttribute);
    cuuint64_t before = 0, after = 0;
    bool have_before =
        get_attr && get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &before) == CUDA_SUCCESS;
    if (roundtrim_cuda_capture_active() ||
        ROUNDTRIM_CUDA_CALL(cuMemPoolTrimTo)(pool, 0) != CUDA_SUCCESS)
        return false;
    if (have_before &&
        get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &after) == CUDA_SUCCESS &&
        before > after)
        *released += before - after;
    return true;
}

/* Trims the created pools of dev (-1: host pools); stops once a capture has begun. */
static bool trim_created(int dev, uint64_t *released, bool *stop)
{
    bool any = false;
    uintptr_t pool;
    for (int at = 0; !*stop && roundtrim_cuda_pool_next(&at, dev, &pool); at++) {
        any |= trim_one((CUmemoryPool)pool, released);
        roundtrim_cuda_pool_done(at);
        *stop = roundtrim_cuda_capture_active();
    }
    return any;
}

/* One device's pools, inside its primary context: synchronize first (frees still queued on a
 * stream count as used and stay), then its default pool when it served stream-ordered
 * allocations, its created pools, and the host pools when asked. */
static bool trim_device(int dev, bool host_pools, uint64_t *released, bool *stop)
{
    __typeof__(&cuCtxSynchronize) synchronize = ROUNDTRIM_CUDA_CALL(cuCtxSynchronize);
    __typeof__(&cuDeviceGetDefaultMemPool) default_pool =
        ROUNDTRIM_CUDA_CALL(cuDeviceGetDefaultMemPool);
    bool any = false;
    *stop = roundtrim_cuda_capture_active();
    if (!*stop && synchronize)
        *stop = capture_error(synchronize());
    CUmemoryPool pool = NULL;
    if (!*stop && (roundtrim_cuda_devices_async() & (1ull << dev)) && default_pool &&
        default_pool(&pool, dev) == CUDA_SUCCESS && pool)
        any |= trim_one(pool, released);
    if (!*stop)
        any |= trim_created(dev, released, stop);
    if (!*stop && host_pools)
        any |= trim_created(-1, released, stop);
    return any;
}

enum roundtrim_skip roundtrim_cuda_pool_trim(uint64_t *released_bytes)
{
    bool host_pools;
    *released_bytes = 0;
    if (!roundtrim_cuda_seen())
        return RT_SKIP_NOTHING_TO_DO;
    uint64_t work = roundtrim_cuda_devices_async() | roundtrim_cuda_pool_devices(&host_pools);
    /* Host pools are trimmed inside the first device context the program uses. */
    uint64_t mask = work | (host_pools ? roundtrim_cuda_devices_used() : 0);
    if (!work && !host_pools)
        return RT_SKIP_NOTHING_TO_DO; /* no stream-ordered memory */
    /* A synchronize during a capture would invalidate the program's graph. */
    if (roundtrim_cuda_capture_active())
        return RT_SKIP_cuda_capture;
    if (!roundtrim_cuda_context_calls() || !ROUNDTRIM_CUDA_CALL(cuMemPoolTrimTo))
        return RT_SKIP_no_driver_entry;
    CUcontext saved = roundtrim_cuda_current_context();
    bool any = false, stop = false, entered = false;
    /* Another thread may begin a capture at any moment: checked again right before every
     * synchronize and every trim, and once one has begun the rest waits for a later round. What
     * remains is the window inside the driver hooks themselves, between the driver starting a
     * capture and the hook counting it. A device whose primary context the program does not
     * keep active is left alone: entering it would create a context. */
    for (int dev = 0; dev < ROUNDTRIM_CUDA_MAX_DEVICES && !stop; dev++) {
        bool host_here = host_pools && !entered;
        if (!(mask & (1ull << dev)) || (!(work & (1ull << dev)) && !host_here) ||
            !roundtrim_cuda_primary_enter(dev))
            continue;
        any |= trim_device(dev, host_here, released_bytes, &stop);
        entered = true;
        roundtrim_cuda_primary_leave(dev, saved);
        stop = stop || roundtrim_cuda_capture_active();
    }
    if (any)
        return RT_SKIP_NONE;
    if (stop)
        return RT_SKIP_cuda_capture;
    return entered ? RT_SKIP_NOTHING_TO_DO : RT_SKIP_no_context;
}

/* Adds what one pool keeps reserved, and what of it is allocated. */
static void add_pool(CUmemoryPool pool, uint64_t *reserved, uint64_t *used)
{
    __typeof__(&cuMemPoolGetAttribute) get_attr = ROUNDTRIM_CUDA_CALL(cuMemPoolGetAttribute);
    cuuint64_t r = 0, u = 0;
    if (get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) == CUDA_SUCCESS &&
        get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) == CUDA_SUCCESS) {
        *reserved += r;
        *used += u < r ? u : r;
    }
}

/* The pools the process used (the pinned host pools too when asked): what they keep reserved
 * and what of it is allocated. */
static enum roundtrim_skip pool_totals(uint64_t *reserved, uint64_t *used, bool host)
{
    bool host_pools;
    *reserved = *used = 0;
    if (!roundtrim_cuda_seen())
        return RT_SKIP_no_cuda;
    uint64_t async = roundtrim_cuda_devices_async();
    uint64_t created = roundtrim_cuda_pool_devices(&host_pools);
    if (!async && !created && !host_pools)
        return RT_SKIP_NONE; /* no stream-ordered memory: nothing cached by the driver */
    __typeof__(&cuDeviceGetDefaultMemPool) default_pool =
        ROUNDTRIM_CUDA_CALL(cuDeviceGetDefaultMemPool);
    if (!ROUNDTRIM_CUDA_CALL(cuMemPoolGetAttribute))
        return RT_SKIP_no_driver_entry;
    for (int dev = 0; dev < ROUNDTRIM_CUDA_MAX_DEVICES; dev++) {
        CUmemoryPool pool = NULL;
        if ((async & (1ull << dev)) && default_pool && default_pool(&pool, dev) == CUDA_SUCCESS &&
            pool)
            add_pool(pool, reserved, used);
    }
    uintptr_t pool;
    for (int dev = host ? -1 : 0; dev < ROUNDTRIM_CUDA_MAX_DEVICES; dev++) {
        if (dev >= 0 && !(created & (1ull << dev)))
            continue;
        for (int at = 0; roundtrim_cuda_pool_next(&at, dev, &pool); at++) {
            add_pool((CUmemoryPool)pool, reserved, used);
            roundtrim_cuda_pool_done(at);
        }
    }
    return RT_SKIP_NONE;
}

enum roundtrim_skip roundtrim_cuda_pool_cached(uint64_t *cached)
{
    uint64_t reserved, used;
    enum roundtrim_skip why = pool_totals(&reserved, &used, true);
    *cached = why ? 0 : reserved - used;
    return why;
}

uint64_t roundtrim_cuda_device_held(void)
{
    uint64_t live = roundtrim_cuda_device_live(), reserved, used;
    if (pool_totals(&reserved, &used, false))
        return live;
    /* Blocks allocated from a pool are counted live by the hooks and are part of its reserve. */
    return (live > used ? live - used : 0) + reserved;
}
