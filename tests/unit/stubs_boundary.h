/* Test-owned stand-ins for what runtime/boundary/boundary.c calls (tests/unit/stubs_boundary.c):
 * the settings, the worker thread, the counter blocks and the CUDA counts. The test sets what they
 * answer and reads what they were asked. */
#ifndef ROUNDTRIM_TEST_STUBS_BOUNDARY_H
#define ROUNDTRIM_TEST_STUBS_BOUNDARY_H

#include <stdbool.h>
#include <stdint.h>

struct stub_boundary {
    bool active;         /* roundtrim_active() */
    bool worker_running; /* roundtrim_worker_running(), and what roundtrim_worker_ensure() starts */
    bool worker_can_start; /* roundtrim_worker_ensure(): false when it cannot start */
    uint64_t traffic;      /* roundtrim_counters_total: every counter is this, then it goes up */
    int ensure_calls, wake_calls, start_soon_calls;
    int snapshots_after_ensure; /* counter snapshots taken after an ensure of the same boundary */
    int snapshots;
};

extern struct stub_boundary stub_boundary;

#endif
