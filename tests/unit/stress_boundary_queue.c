/* The boundary queue under concurrent producers (built with 4 cells: full most of the time) and
 * its consumer: every record is one whole snapshot (the kept slot's seqlock never hands out a
 * torn copy), each producer's boundaries come out in the order it put them, and the records plus
 * what they say they merged add up to every boundary put. Run twice: as it comes, and with the
 * queue's windows (queue.c's WINDOW) made wide by a yield, where a race that needs a preemption
 * at one instruction shows at once. */
#include <check.h>
#include <sched.h>
#include <stdint.h>

#include "runtime/boundary/queue.h"
#include "run_suite.h"
#include "snap_stamp.h"
#include "stress.h"

#define PRODUCERS 3
#define PUTS      20000u
#define ID_SHIFT  40

static bool widen;

void roundtrim_boundary_queue_window(const char *where);
void roundtrim_boundary_queue_window(const char *where)
{
    (void)where;
    if (__atomic_load_n(&widen, __ATOMIC_RELAXED))
        sched_yield();
}

struct tally {
    uint64_t records, merged, kept_or_late;
    uint64_t last[PRODUCERS + 1]; /* the last sequence number taken of each producer */
};

static uint64_t stamp(int id, uint64_t seq)
{
    return ((uint64_t)id + 1) << ID_SHIFT | seq;
}

static void produce(int id, void *arg)
{
    (void)arg;
    for (uint64_t seq = 1; seq <= PUTS; seq++) {
        struct roundtrim_boundary_snap s;
        snap_stamp(&s, stamp(id, seq));
        roundtrim_boundary_queue_put(&s);
        if (seq % 64 == 0)
            sched_yield(); /* now and then, let the consumer drain */
    }
}

static void take_all(struct tally *t)
{
    struct roundtrim_boundary_snap s;
    uint64_t merged;
    while (roundtrim_boundary_take(&s, &merged)) {
        uint64_t n = snap_stamp_of(&s);
        ck_assert_msg(snap_stamped(&s), "torn snapshot (stamp %llx)", (unsigned long long)n);
        uint64_t id = (n >> ID_SHIFT) - 1, seq = n & ((1ull << ID_SHIFT) - 1);
        ck_assert_uint_le(id, PRODUCERS);
        ck_assert_msg(seq > t->last[id], "producer %llu: boundary %llu taken after %llu",
                      (unsigned long long)id, (unsigned long long)seq,
                      (unsigned long long)t->last[id]);
        t->last[id] = seq;
        t->records++;
        t->merged += merged;
    }
}

static void consume(void *arg)
{
    take_all(arg);
}

static void run(void)
{
    struct tally t = {0};
    struct stress s = {PRODUCERS, produce, consume, &t};
    stress_run(&s);
    take_all(&t);
    /* A boundary dropped while another dropped one was being kept has no snapshot: the next one
     * merges it. One last boundary, queued now, accounts for any. */
    struct roundtrim_boundary_snap last;
    snap_stamp(&last, stamp(PRODUCERS, 1));
    roundtrim_boundary_queue_put(&last);
    take_all(&t);
    ck_assert(!roundtrim_boundary_pending());
    ck_assert_uint_eq(t.records + t.merged, (uint64_t)PRODUCERS * PUTS + 1);
    ck_assert_uint_eq(t.last[PRODUCERS], 1);
    ck_assert_uint_gt(t.merged, 0); /* the queue did overflow */
}

START_TEST(producers_and_consumer)
{
    run();
}
END_TEST

START_TEST(producers_and_consumer_with_wide_windows)
{
    widen = true;
    run();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stress_boundary_queue");
    TCase *tc = tcase_create("stress_boundary_queue");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, producers_and_consumer);
    tcase_add_test(tc, producers_and_consumer_with_wide_windows);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
