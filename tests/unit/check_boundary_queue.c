/* The queue of boundaries to the worker (runtime/boundary/queue.c), one thread at a time: order,
 * what a full queue drops and keeps, how the dropped ones are merged into the records, the wrap
 * of positions, and the fork child's fresh start. Then interleavings, played on one thread: the
 * queue is built with its windows open (ROUNDTRIM_BOUNDARY_QUEUE_TEST), and a test has a boundary
 * (what a signal handler, or another thread, does) or a take happen at one of them. Each test
 * runs in a process of its own (Check's fork mode), so each starts from the empty queue. The
 * concurrent side is stress_boundary_queue. */
#include <check.h>
#include <stdint.h>

#include "runtime/boundary/queue.h"
#include "run_suite.h"
#include "windows.h"
#include "snap_stamp.h"

#define CELLS 256u /* the queue's size in the library */

void roundtrim_boundary_queue_window(const char *where);
void roundtrim_boundary_queue_window(const char *where)
{
    window_pass(where);
}

static void put(uint64_t n)
{
    struct roundtrim_boundary_snap s;
    snap_stamp(&s, n);
    roundtrim_boundary_queue_put(&s);
}

/* Takes the next record: the boundary stamped n, with `merged` dropped ones before it. */
static void take_is(uint64_t n, uint64_t merged)
{
    struct roundtrim_boundary_snap s;
    uint64_t m = UINT64_MAX;
    ck_assert_msg(roundtrim_boundary_take(&s, &m), "no record where boundary %llu was due",
                  (unsigned long long)n);
    ck_assert_msg(snap_stamped(&s), "record of boundary %llu is not one snapshot",
                  (unsigned long long)n);
    ck_assert_uint_eq(snap_stamp_of(&s), n);
    ck_assert_uint_eq(m, merged);
}

static void put_range(uint64_t first, uint64_t last)
{
    for (uint64_t n = first; n <= last; n++)
        put(n);
}

/* The boundaries first .. last, in order, none merging another. */
static void take_range(uint64_t first, uint64_t last)
{
    for (uint64_t n = first; n <= last; n++)
        take_is(n, 0);
}

static void take_none(void)
{
    struct roundtrim_boundary_snap s;
    uint64_t m;
    ck_assert(!roundtrim_boundary_pending());
    ck_assert(!roundtrim_boundary_take(&s, &m));
}

START_TEST(empty_queue_has_nothing)
{
    take_none();
}
END_TEST

START_TEST(boundaries_come_out_in_order_and_whole)
{
    put_range(1, 10);
    for (uint64_t n = 1; n <= 10; n++) {
        ck_assert(roundtrim_boundary_pending());
        take_is(n, 0);
    }
    take_none();
}
END_TEST

/* Positions run far past the cells: order holds across every wrap, full or not. */
START_TEST(order_holds_across_wraps)
{
    uint64_t next_put = 1, next_take = 1;
    for (int round = 0; round < 40; round++) {
        uint64_t room = CELLS - (next_put - next_take);
        uint64_t burst = 1 + (uint64_t)(round * 37) % CELLS;
        burst = burst < room ? burst : room;
        for (uint64_t i = 0; i < burst; i++)
            put(next_put++);
        uint64_t drain = round % 3 ? burst : burst / 2;
        for (uint64_t i = 0; i < drain; i++)
            take_is(next_take++, 0);
    }
    while (next_take < next_put)
        take_is(next_take++, 0);
    take_none();
}
END_TEST

/* A full queue drops: the last boundary dropped is kept, and recorded once the queue drains, as
 * one record that merges the others dropped. */
START_TEST(full_queue_keeps_the_last_dropped)
{
    put_range(1, CELLS + 5);
    take_range(1, CELLS);
    ck_assert(roundtrim_boundary_pending()); /* the kept one */
    take_is(CELLS + 5, 4);
    take_none();
}
END_TEST

/* A boundary queued after drops (its dropped_before counts them) comes after the kept one. */
START_TEST(kept_boundary_comes_before_later_queued_ones)
{
    put_range(1, CELLS + 3);
    take_is(1, 0);
    put(1000); /* room for one again */
    take_range(2, CELLS);
    take_is(CELLS + 3, 2);
    take_is(1000, 0);
    take_none();
}
END_TEST

/* A boundary dropped after one was queued comes after it. The kept one it replaced is merged
 * into the next record: its snapshot is gone, its count is not. */
START_TEST(later_drop_replaces_the_kept_boundary)
{
    put_range(1, CELLS + 1);
    take_range(1, CELLS);
    ck_assert(roundtrim_boundary_pending()); /* CELLS + 1, kept */
    put_range(5001, 5000 + CELLS);
    put(9000); /* dropped: kept in place of CELLS + 1 */
    take_is(5001, 1);
    take_range(5002, 5000 + CELLS);
    take_is(9000, 0);
    take_none();
    put(9001);
    take_is(9001, 0);
    take_none();
}
END_TEST

/* Every boundary is recorded once, or merged into exactly one record: across several episodes
 * of overflow, the records and what they merged add up to the boundaries put. */
START_TEST(records_and_merged_add_up_to_the_boundaries)
{
    uint64_t puts = 0, recorded = 0;
    for (int episode = 0; episode < 5; episode++) {
        uint64_t burst = CELLS + 1 + (uint64_t)episode * 7;
        for (uint64_t i = 0; i < burst; i++)
            put(++puts);
        struct roundtrim_boundary_snap s;
        uint64_t m, last = 0;
        while (roundtrim_boundary_take(&s, &m)) {
            ck_assert(snap_stamped(&s));
            ck_assert_uint_gt(snap_stamp_of(&s), last); /* one thread: the order it put them */
            last = snap_stamp_of(&s);
            recorded += 1 + m;
        }
        ck_assert_uint_eq(last, puts); /* the last boundary is the one kept */
        ck_assert_uint_eq(recorded, puts);
    }
}
END_TEST

START_TEST(fork_child_starts_empty)
{
    put_range(1, CELLS + 2);
    roundtrim_boundary_queue_fork_child();
    take_none();
    put(7);
    struct roundtrim_boundary_snap s;
    uint64_t m;
    ck_assert(roundtrim_boundary_take(&s, &m));
    ck_assert_uint_eq(s.dropped_before, 0); /* the parent's drops are not the child's */
    ck_assert_uint_eq(m, 0);
    take_none();
}
END_TEST

/* The worker looks at the kept boundary while the queue fills again and a later boundary is
 * dropped, replacing the kept one: the replacement is later than the queued boundary, and comes
 * after it. (The worker once decided on what it had seen before it read the slot, and recorded
 * the replacement first: a producer's boundaries out of their order.) */
static void refill_and_drop(void)
{
    put_range(3001, 3000 + CELLS - 1);
    put(4000); /* full: dropped and kept, in place of CELLS + 1 */
}

START_TEST(kept_boundary_replaced_while_taken_stays_in_order)
{
    put_range(1, CELLS + 1);
    take_range(1, CELLS);
    put(1000); /* queued after CELLS + 1 was dropped: the kept one would come first */
    at_window("kept_seen", refill_and_drop);
    take_is(1000, 1); /* CELLS + 1's snapshot is gone: merged into the next record */
    window_passed();
    take_range(3001, 3000 + CELLS - 1);
    take_is(4000, 0);
    take_none();
}
END_TEST

/* A signal handler that interrupts a boundary between its cell's claim and its publication: the
 * handler's boundary takes the next cell, the worker waits for the first, and both come out in
 * the order of their cells. */
static void handler_while_claimed(void)
{
    put(2);
    struct roundtrim_boundary_snap s;
    uint64_t m;
    ck_assert(roundtrim_boundary_pending());
    ck_assert(!roundtrim_boundary_take(&s, &m)); /* the first cell is not published yet */
}

START_TEST(handler_between_claim_and_publish)
{
    at_window("claimed", handler_while_claimed);
    put(1);
    window_passed();
    take_is(1, 0);
    take_is(2, 0);
    take_none();
}
END_TEST

/* A signal handler that interrupts the writer of the kept slot, and is dropped too: it finds the
 * slot being written and leaves its boundary to the next record, which merges it. */
static void handler_dropped_while_keeping(void)
{
    put(501);
}

START_TEST(handler_while_the_kept_slot_is_written)
{
    put_range(1, CELLS);
    at_window("keeping", handler_dropped_while_keeping);
    put(500);
    window_passed();
    take_range(1, CELLS);
    take_is(500, 0);
    take_none(); /* 501 was counted, its snapshot never kept */
    put(600);
    take_is(600, 1);
    take_none();
}
END_TEST

/* A boundary queued while the worker copies the kept one: the kept one comes first. A take may
 * find the new boundary half queued and come back with nothing; the worker tries again. */
static void queue_one_while_copying(void)
{
    put(700);
}

START_TEST(boundary_queued_while_the_kept_one_is_copied)
{
    put_range(1, CELLS + 1);
    take_range(1, CELLS);
    at_window("copying", queue_one_while_copying);
    struct roundtrim_boundary_snap s;
    uint64_t m;
    if (!roundtrim_boundary_take(&s, &m))
        ck_assert(roundtrim_boundary_take(&s, &m));
    window_passed();
    ck_assert(snap_stamped(&s));
    ck_assert_uint_eq(snap_stamp_of(&s), CELLS + 1);
    ck_assert_uint_eq(m, 0);
    take_is(700, 0);
    take_none();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("boundary_queue");
    TCase *tc = tcase_create("boundary_queue");
    tcase_add_test(tc, empty_queue_has_nothing);
    tcase_add_test(tc, boundaries_come_out_in_order_and_whole);
    tcase_add_test(tc, order_holds_across_wraps);
    tcase_add_test(tc, full_queue_keeps_the_last_dropped);
    tcase_add_test(tc, kept_boundary_comes_before_later_queued_ones);
    tcase_add_test(tc, later_drop_replaces_the_kept_boundary);
    tcase_add_test(tc, records_and_merged_add_up_to_the_boundaries);
    tcase_add_test(tc, fork_child_starts_empty);
    tcase_add_test(tc, kept_boundary_replaced_while_taken_stays_in_order);
    tcase_add_test(tc, handler_between_claim_and_publish);
    tcase_add_test(tc, handler_while_the_kept_slot_is_written);
    tcase_add_test(tc, boundary_queued_while_the_kept_one_is_copied);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
