#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/round_fill.h"

#include <string.h>

#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"

/* Free and total memory of the devices the process used, summed, as the driver sees them, each
 * read inside its device's primary context. False, with *skipped saying why, when none could be
 * read. */
static bool mem_info(uint64_t *free_mem, uint64_t *total_mem, enum roundtrim_skip *skipped)
{
    __typeof__(&cuMemGetInfo_v2) get_info;
    size_t f = 0, t = 0;
    uint64_t mask = roundtrim_cuda_devices_used();
    bool any = false, entered = false;
    *free_mem = *total_mem = 0;
    if (!mask) {
        *skipped = RT_SKIP_no_device;
        return false;
    }
    if (!roundtrim_cuda_context_calls() || !(get_info = ROUNDTRIM_CUDA_CALL(cuMemGetInfo_v2))) {
        *skipped = RT_SKIP_no_driver_entry;
        return false;
    }
    /* A capture in the program's default (global) mode forbids other threads the calls the
     * driver deems unsafe; no driver call of ours is worth invalidating a graph. */
    if (roundtrim_cuda_capture_active()) {
        *skipped = RT_SKIP_cuda_capture;
        return false;
    }
    CUcontext saved = roundtrim_cuda_current_context();
    bool captured = false;
    for (int dev = 0; dev < ROUNDTRIM_CUDA_MAX_DEVICES && !captured; dev++) {
        if (!(mask & (1ull << dev)) || !roundtrim_cuda_primary_enter(dev))
            continue;
        entered = true;
        captured = roundtrim_cuda_capture_active(); /* begun meanwhile: a partial sum is no sum */
        if (!captured && get_info(&f, &t) == CUDA_SUCCESS) {
            *free_mem += f;
            *total_mem += t;
            any = true;
        }
        roundtrim_cuda_primary_leave(dev, saved);
    }
    if (captured)
        any = false;
    if (!any)
        *skipped = captured  ? RT_SKIP_cuda_capture
                   : entered ? RT_SKIP_driver_error
                             : RT_SKIP_no_context;
    return any;
}

static void class_delta(struct roundtrim_cuda_class_counts *d,
                        const struct roundtrim_cuda_class_counts *now,
                        const struct roundtrim_cuda_class_counts *before)
{
    /* Two boundaries racing on two threads may queue their snapshots out of order. */
#define ABOVE(f) (now->f > before->f ? now->f - before->f : 0)
    d->alloc_calls = ABOVE(alloc_calls);
    d->alloc_bytes = ABOVE(alloc_bytes);
    d->free_calls = ABOVE(free_calls);
    d->free_bytes = ABOVE(free_bytes);
#undef ABOVE
    d->live_bytes = now->live_bytes;
    d->peak_bytes = now->peak_bytes;
}

bool roundtrim_cuda_round_fill(struct roundtrim_cuda_round *out,
                               const struct roundtrim_cuda_counts *now,
                               const struct roundtrim_cuda_counts *before, bool ask_driver)
{
    memset(out, 0, sizeof *out);
    if (!now->seen)
        return false;
    static const struct roundtrim_cuda_counts zero;
    if (!before->seen)
        before = &zero;
    struct roundtrim_cuda_class_counts dev, host;
    class_delta(&dev, &now->device, &before->device);
    class_delta(&host, &now->host, &before->host);
    out->alloc_calls = dev.alloc_calls;
    out->alloc_bytes = dev.alloc_bytes;
    out->free_calls = dev.free_calls;
    out->free_bytes = dev.free_bytes;
    out->live_bytes = dev.live_bytes;
    out->peak_bytes = dev.peak_bytes;
    out->host_alloc_calls = host.alloc_calls;
    out->host_alloc_bytes = host.alloc_bytes;
    out->host_free_calls = host.free_calls;
    out->host_free_bytes = host.free_bytes;
    out->host_live_bytes = host.live_bytes;
    out->present = true;
    if (!ask_driver) {
        out->mem_info_skipped = RT_SKIP_exiting;
        return true;
    }
    out->have_mem_info = mem_info(&out->free_mem, &out->total_mem, &out->mem_info_skipped);
    return true;
}
