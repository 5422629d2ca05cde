/* What a round boundary does (runtime/boundary/boundary.c), with the worker, the settings and the
 * counters stood in (stubs_boundary.c): whether it counts and queues, when it starts and wakes
 * the worker, and that its snapshot is taken after the worker's start (which allocates: that
 * belongs to the round that ends). The queue itself is check_boundary_queue's. */
#include <check.h>
#include <string.h>

#include "include/roundtrim.h"
#include "runtime/boundary/boundary.h"
#include "run_suite.h"
#include "stubs_boundary.h"

static void active(bool worker_running, bool worker_can_start)
{
    stub_boundary = (struct stub_boundary){.active = true,
                                           .worker_running = worker_running,
                                           .worker_can_start = worker_can_start,
                                           .traffic = 100};
}

/* The next record's source, label and counters (every counter is the same number). */
static void take_is(enum roundtrim_source src, const char *label, uint64_t traffic)
{
    struct roundtrim_boundary_snap s;
    uint64_t merged;
    ck_assert(roundtrim_boundary_take(&s, &merged));
    ck_assert_int_eq(s.src, src);
    ck_assert_ptr_eq(s.label, label);
    ck_assert_uint_eq(s.traffic.malloc_calls, traffic);
    ck_assert_uint_eq(s.traffic.free_bytes, traffic);
    ck_assert_uint_eq(merged, 0);
    ck_assert(s.wall_s > 1e9); /* the wall clock, in seconds since the epoch */
}

START_TEST(inactive_library_sees_no_boundary)
{
    stub_boundary = (struct stub_boundary){.active = false, .worker_can_start = true};
    roundtrim_boundary(ROUNDTRIM_SRC_CALL);
    roundtrim_round_end();
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 0);
    ck_assert(!roundtrim_boundary_pending());
    ck_assert_int_eq(stub_boundary.ensure_calls, 0);
    ck_assert_int_eq(stub_boundary.snapshots, 0);
}
END_TEST

START_TEST(boundary_starts_the_worker_then_snapshots_then_wakes)
{
    active(false, true);
    roundtrim_boundary_labelled(ROUNDTRIM_SRC_PYTHON, "train_step");
    ck_assert_int_eq(stub_boundary.ensure_calls, 1);
    ck_assert_int_eq(stub_boundary.snapshots_after_ensure, 1);
    ck_assert_int_eq(stub_boundary.wake_calls, 1);
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 1);
    take_is(ROUNDTRIM_SRC_PYTHON, "train_step", 100);
}
END_TEST

/* A worker that cannot start is not woken; the boundary is queued all the same. */
START_TEST(boundary_without_a_worker_is_queued)
{
    active(false, false);
    roundtrim_boundary(ROUNDTRIM_SRC_TIMER);
    ck_assert_int_eq(stub_boundary.wake_calls, 0);
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 1);
    take_is(ROUNDTRIM_SRC_TIMER, NULL, 100);
}
END_TEST

START_TEST(round_end_is_a_call_boundary)
{
    active(true, true);
    roundtrim_round_end();
    roundtrim_round_end();
    take_is(ROUNDTRIM_SRC_CALL, NULL, 100);
    take_is(ROUNDTRIM_SRC_CALL, NULL, 101);
    ck_assert_int_eq(stub_boundary.wake_calls, 2);
}
END_TEST

/* In a handler: the snapshot only (a handler can neither start nor wait for a thread); the wake
 * comes last, or, with no worker yet, a request that the next malloc start it. */
START_TEST(signal_boundary_snapshots_and_wakes_apart)
{
    active(false, true);
    roundtrim_boundary_from_signal();
    ck_assert_int_eq(stub_boundary.ensure_calls, 0);
    ck_assert_int_eq(stub_boundary.wake_calls, 0);
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 1);
    roundtrim_boundary_signal_wake();
    ck_assert_int_eq(stub_boundary.start_soon_calls, 1);
    ck_assert_int_eq(stub_boundary.wake_calls, 0);
    stub_boundary.worker_running = true;
    roundtrim_boundary_from_signal();
    roundtrim_boundary_signal_wake();
    ck_assert_int_eq(stub_boundary.wake_calls, 1);
    ck_assert_int_eq(stub_boundary.start_soon_calls, 1);
    take_is(ROUNDTRIM_SRC_SIGNAL, NULL, 100);
    take_is(ROUNDTRIM_SRC_SIGNAL, NULL, 101);
}
END_TEST

/* Seen counts every boundary, dropped ones included. */
START_TEST(seen_counts_dropped_boundaries)
{
    active(true, true);
    for (int i = 0; i < 1000; i++)
        roundtrim_boundary_from_signal();
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 1000);
    struct roundtrim_boundary_snap s;
    uint64_t merged, records = 0, total = 0;
    while (roundtrim_boundary_take(&s, &merged)) {
        records++;
        total += 1 + merged;
    }
    ck_assert_uint_lt(records, 1000);
    ck_assert_uint_eq(total, 1000);
}
END_TEST

START_TEST(fork_child_forgets_the_parents_boundaries)
{
    active(true, true);
    roundtrim_boundary(ROUNDTRIM_SRC_CALL);
    roundtrim_boundary_fork_child();
    ck_assert_uint_eq(roundtrim_boundaries_seen(), 0);
    ck_assert(!roundtrim_boundary_pending());
}
END_TEST

START_TEST(source_names)
{
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_SIGNAL), "signal");
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_CALL), "call");
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_PYTHON), "python");
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_TIMER), "timer");
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_PRESSURE), "pressure");
    ck_assert_str_eq(roundtrim_source_name(ROUNDTRIM_SRC_COUNT), "unknown");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("boundary");
    TCase *tc = tcase_create("boundary");
    tcase_add_test(tc, inactive_library_sees_no_boundary);
    tcase_add_test(tc, boundary_starts_the_worker_then_snapshots_then_wakes);
    tcase_add_test(tc, boundary_without_a_worker_is_queued);
    tcase_add_test(tc, round_end_is_a_call_boundary);
    tcase_add_test(tc, signal_boundary_snapshots_and_wakes_apart);
    tcase_add_test(tc, seen_counts_dropped_boundaries);
    tcase_add_test(tc, fork_child_forgets_the_parents_boundaries);
    tcase_add_test(tc, source_names);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
