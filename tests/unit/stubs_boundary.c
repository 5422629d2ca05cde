/* What runtime/boundary/boundary.c calls, stood in for its unit suite (stubs_boundary.h). */
#include "stubs_boundary.h"

#include <string.h>

#include "runtime/alloc/thread_counters.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/track.h"
#include "runtime/threads/worker_thread.h"

struct stub_boundary stub_boundary;
static bool ensured; /* an ensure since the last snapshot */

bool roundtrim_active(void)
{
    return stub_boundary.active;
}

bool roundtrim_worker_ensure(void)
{
    stub_boundary.ensure_calls++;
    ensured = true;
    if (stub_boundary.worker_can_start)
        stub_boundary.worker_running = true;
    return stub_boundary.worker_running;
}

void roundtrim_worker_wake(void)
{
    stub_boundary.wake_calls++;
}

bool roundtrim_worker_running(void)
{
    return stub_boundary.worker_running;
}

void roundtrim_worker_start_soon(void)
{
    stub_boundary.start_soon_calls++;
}

void roundtrim_counters_total(struct roundtrim_traffic *out)
{
    uint64_t n = stub_boundary.traffic++;
    *out = (struct roundtrim_traffic){n, n, n, n, 0};
    stub_boundary.snapshots++;
    stub_boundary.snapshots_after_ensure += ensured;
    ensured = false;
}

void roundtrim_cuda_counts_snapshot(struct roundtrim_cuda_counts *out)
{
    memset(out, 0, sizeof *out);
}
