#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/context.h"

#include <stdint.h>

#include "runtime/cuda/account.h"
#include "runtime/cuda/driver.h"

bool roundtrim_cuda_context_calls(void)
{
    return ROUNDTRIM_CUDA_CALL(cuCtxGetCurrent) && ROUNDTRIM_CUDA_CALL(cuCtxSetCurrent);
}

CUcontext roundtrim_cuda_current_context(void)
{
    __typeof__(&cuCtxGetCurrent) get_current = ROUNDTRIM_CUDA_CALL(cuCtxGetCurrent);
    CUcontext ctx = NULL;
    if (!get_current || get_current(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

/* The driver's release of a primary context: the _v2 ABI, or the first one on old drivers. */
static __typeof__(&cuDevicePrimaryCtxRelease_v2) primary_release_call(void)
{
    __typeof__(&cuDevicePrimaryCtxRelease_v2) release =
        ROUNDTRIM_CUDA_CALL(cuDevicePrimaryCtxRelease_v2);
    return release ? release : ROUNDTRIM_CUDA_CALL(cuDevicePrimaryCtxRelease);
}

bool roundtrim_cuda_primary_enter(int dev)
{
    __typeof__(&cuDevicePrimaryCtxGetState) get_state =
        ROUNDTRIM_CUDA_CALL(cuDevicePrimaryCtxGetState);
    __typeof__(&cuDevicePrimaryCtxRetain) retain = ROUNDTRIM_CUDA_CALL(cuDevicePrimaryCtxRetain);
    __typeof__(&cuDevicePrimaryCtxRelease_v2) release = primary_release_call();
    __typeof__(&cuCtxSetCurrent) set_current = ROUNDTRIM_CUDA_CALL(cuCtxSetCurrent);
    unsigned flags = 0;
    int active = 0;
    CUcontext ctx = NULL;
    if (!get_state || !retain || !release || !set_current)
        return false;
    if (get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return false;
    if (retain(&ctx, dev) != CUDA_SUCCESS)
        return false;
    /* Checked again with our reference held, and given back at once on any doubt (the driver
     * going away at exit answers with an error here). What this cannot see: the program
     * dropping its last reference between the check above and our retain. Our retain then
     * re-creates the context, and our own reference makes it read active; it lives until
     * primary_leave releases it, a few driver calls later. Only a program tearing CUDA down
     * while a round is recorded meets that window; closing it would need the program's own
     * retains and releases counted in the hooks. */
    if (!ctx || get_state(dev, &flags, &active) != CUDA_SUCCESS || !active ||
        set_current(ctx) != CUDA_SUCCESS) {
        release(dev);
        return false;
    }
    return true;
}

void roundtrim_cuda_primary_leave(int dev, CUcontext saved)
{
    ROUNDTRIM_CUDA_CALL(cuCtxSetCurrent)(saved);
    primary_release_call()(dev);
}

enum roundtrim_skip roundtrim_cuda_context_enter(struct roundtrim_cuda_scope *scope)
{
    uint64_t mask = roundtrim_cuda_devices_used();
    if (!mask)
        return RT_SKIP_no_device;
    if (!roundtrim_cuda_context_calls())
        return RT_SKIP_no_driver_entry;
    scope->saved = roundtrim_cuda_current_context();
    for (int dev = 0; dev < ROUNDTRIM_CUDA_MAX_DEVICES; dev++) {
        if ((mask & (1ull << dev)) && roundtrim_cuda_primary_enter(dev)) {
            scope->device = dev;
            return RT_SKIP_NONE;
        }
    }
    return RT_SKIP_no_context;
}

void roundtrim_cuda_context_leave(const struct roundtrim_cuda_scope *scope)
{
    if (roundtrim_cuda_context_calls())
        roundtrim_cuda_primary_leave(scope->device, scope->saved);
}
