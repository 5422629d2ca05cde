#include "runtime/boundary/boundary.h"

#include <time.h>

#include "runtime/core/clock.h"
#include "runtime/core/export.h"
#include "runtime/core/settings.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/threads/worker_thread.h"
#include "runtime/alloc/next_alloc.h"

static const char *const source_names[ROUNDTRIM_SRC_COUNT] = {
    [ROUNDTRIM_SRC_SIGNAL] = "signal",     [ROUNDTRIM_SRC_CALL] = "call",
    [ROUNDTRIM_SRC_PYTHON] = "python",     [ROUNDTRIM_SRC_TIMER] = "timer",
    [ROUNDTRIM_SRC_PRESSURE] = "pressure",
};

const char *roundtrim_source_name(enum roundtrim_source src)
{
    return (unsigned)src < ROUNDTRIM_SRC_COUNT ? source_names[src] : "unknown";
}

static uint64_t seen;

uint64_t roundtrim_boundaries_seen(void)
{
    return __atomic_load_n(&seen, __ATOMIC_ACQUIRE);
}

/* Everything here is async-signal-safe: plain loads of the counter blocks, clock_gettime and
 * atomic instructions. */
static void capture(enum roundtrim_source src, const char *label)
{
    struct roundtrim_boundary_snap snap;
    __atomic_add_fetch(&seen, 1, __ATOMIC_ACQ_REL);
    snap.src = src;
    snap.label = label;
    snap.wall_s = roundtrim_wall_seconds(); /* clock_gettime: async-signal-safe */
    snap.mono_us = roundtrim_now_us();
    roundtrim_counters_total(&snap.traffic);
    roundtrim_cuda_counts_snapshot(&snap.cuda);
    roundtrim_boundary_queue_put(&snap);
}

void roundtrim_boundary_labelled(enum roundtrim_source src, const char *label)
{
    if (!roundtrim_active())
        return;
    /* Starting the worker allocates on this thread: that belongs to the round that ends. */
    bool running = roundtrim_worker_ensure();
    capture(src, label);
    if (running)
        roundtrim_worker_wake();
}

void roundtrim_boundary(enum roundtrim_source src)
{
    roundtrim_boundary_labelled(src, NULL);
}

void roundtrim_boundary_from_signal(void)
{
    capture(ROUNDTRIM_SRC_SIGNAL, NULL);
}

void roundtrim_boundary_signal_wake(void)
{
    if (roundtrim_worker_running())
        roundtrim_worker_wake();
    else
        roundtrim_worker_start_soon();
}

/* The parent's boundaries are the parent's: the child's rounds start from its own. */
void roundtrim_boundary_fork_child(void)
{
    roundtrim_boundary_queue_fork_child();
    seen = 0;
}

ROUNDTRIM_EXPORT void roundtrim_round_end(void)
{
    roundtrim_boundary(ROUNDTRIM_SRC_CALL);
}
