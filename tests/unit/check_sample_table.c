/* The table of sampled blocks (runtime/sites/sample_table.c), one thread at a time: what an insert
 * and a remove give back, the filter that free tests first, a full probe window, removal in the
 * middle of a chain (tombstones) and the reuse of removed slots, a block's address sampled again,
 * samples kept after their free until their round's record is written, and the fork child; and a
 * block freed and sampled again while the worker's scan reads its slot, played on one thread at
 * the table's window (ROUNDTRIM_SAMPLE_TABLE_TEST). The addresses are never dereferenced. Each
 * test runs in a process of its own (Check's fork mode). */
#include <check.h>
#include <stdint.h>

#include "runtime/sites/sample_table.h"
#include "run_suite.h"
#include "windows.h"
#include "sample_homes.h"

#define PROBE 64 /* the slots a sample may land in from its home slot */

void roundtrim_sample_table_window(const char *where);
void roundtrim_sample_table_window(const char *where)
{
    window_pass(where);
}

/* What a scan saw. */
struct seen {
    uint64_t n, weight_sum;
    struct roundtrim_sample_view v[512];
};

static void note(const struct roundtrim_sample_view *v, void *arg)
{
    struct seen *s = arg;
    if (s->n < sizeof s->v / sizeof s->v[0])
        s->v[s->n] = *v;
    s->n++;
    s->weight_sum += v->weight;
}

static uint64_t scan(struct seen *s, uint32_t done)
{
    *s = (struct seen){0};
    return roundtrim_sample_table_scan(note, s, done);
}

static void setup(void)
{
    ck_assert(roundtrim_sample_table_init());
}

static void remove_is(uintptr_t p, uint32_t round, uint32_t reported, uint32_t site,
                      uint64_t weight)
{
    uint32_t got_site = 0;
    uint64_t got_weight = 0;
    ck_assert_msg(roundtrim_sample_table_remove((void *)p, round, reported, &got_site,
                                                &got_weight) == ROUNDTRIM_SAMPLE_PROGRAM,
                  "sample %#lx not found", (unsigned long)p);
    ck_assert_uint_eq(got_site, site);
    ck_assert_uint_eq(got_weight, weight);
}

static bool removed(uintptr_t p)
{
    uint32_t site;
    uint64_t weight;
    return roundtrim_sample_table_remove((void *)p, 5, 4, &site, &weight);
}

START_TEST(insert_before_init_is_dropped)
{
    ck_assert(!roundtrim_sample_table_insert((void *)0x10000, 1, 1, 1, 0));
}
END_TEST

START_TEST(insert_then_remove_gives_back_site_and_weight)
{
    setup();
    uintptr_t p = 0x7f0000001230;
    ck_assert(roundtrim_sample_table_insert((void *)p, 42, 1, 524288, 0));
    ck_assert(roundtrim_sample_maybe((void *)p));
    remove_is(p, 1, 0, 42, 524288);
    ck_assert(!roundtrim_sample_maybe((void *)p));
    ck_assert(!removed(p)); /* once */
}
END_TEST

START_TEST(unknown_address_is_not_removed)
{
    setup();
    ck_assert(roundtrim_sample_table_insert((void *)0x5000, 1, 1, 10, 0));
    ck_assert(!removed(0x6000));
    ck_assert(!removed(0x5010));
    remove_is(0x5000, 1, 0, 1, 10);
}
END_TEST

START_TEST(scan_sees_live_samples)
{
    setup();
    for (uint32_t i = 1; i <= 100; i++)
        ck_assert(roundtrim_sample_table_insert((void *)(uintptr_t)(0x100000 + i * 64), i, 7,
                                                1000 + i, i % 3));
    struct seen s;
    ck_assert_uint_eq(scan(&s, 0), 100);
    ck_assert_uint_eq(s.n, 100);
    uint64_t sites = 0;
    for (uint64_t i = 0; i < s.n; i++) {
        ck_assert_uint_eq(s.v[i].weight, 1000 + s.v[i].site);
        ck_assert_uint_eq(s.v[i].round, 7);
        ck_assert_uint_eq(s.v[i].freed_in, 0);
        ck_assert_uint_eq(s.v[i].wrapper, s.v[i].site % 3); /* the object wrapper that took it */
        sites += s.v[i].site;
    }
    ck_assert_uint_eq(sites, 100 * 101 / 2);
    for (uint32_t i = 1; i <= 50; i++)
        ck_assert(removed(0x100000 + i * 64));
    ck_assert_uint_eq(scan(&s, 0), 50);
}
END_TEST

/* PROBE + 1 addresses of one home from `from`, the first PROBE sampled: sample i has site i and
 * weight 100 + i. */
static void fill_window(uintptr_t from, uintptr_t p[PROBE + 1])
{
    sample_homes_same(from, p, PROBE + 1);
    for (int i = 0; i < PROBE; i++)
        ck_assert(
            roundtrim_sample_table_insert((void *)p[i], (uint32_t)i, 1, 100 + (uint64_t)i, 0));
}

/* PROBE samples of one home fill its window: the next one is dropped, and every one of them is
 * still found. */
START_TEST(full_probe_window_drops_the_next_sample)
{
    setup();
    uintptr_t p[PROBE + 1];
    fill_window(0x7f0000000000, p);
    ck_assert(!roundtrim_sample_table_insert((void *)p[PROBE], 99, 1, 1, 0));
    ck_assert(!roundtrim_sample_maybe((void *)p[PROBE]));
    for (int i = PROBE - 1; i >= 0; i--)
        remove_is(p[i], 1, 0, (uint32_t)i, 100 + (uint64_t)i);
}
END_TEST

/* A sample removed from the middle of a chain: the ones after it are still found, and its slot
 * takes a new sample when the window is full. */
START_TEST(removed_slot_is_passed_over_then_reused)
{
    setup();
    uintptr_t p[PROBE + 1];
    fill_window(0x7e0000000000, p);
    remove_is(p[10], 1, 0, 10, 110);
    remove_is(p[PROBE - 1], 1, 0, PROBE - 1, 100 + PROBE - 1);
    ck_assert(!removed(p[10]));
    ck_assert(roundtrim_sample_table_insert((void *)p[PROBE], 77, 1, 777, 0));
    ck_assert(roundtrim_sample_table_insert((void *)p[10], 10, 1, 110, 0));
    ck_assert(!roundtrim_sample_table_insert((void *)p[PROBE - 1], 1, 1, 1, 0)); /* full again */
    remove_is(p[PROBE], 1, 0, 77, 777);
    for (int i = 0; i < PROBE - 1; i++)
        remove_is(p[i], 1, 0, (uint32_t)i, 100 + (uint64_t)i);
    struct seen s;
    ck_assert_uint_eq(scan(&s, 0), 0);
}
END_TEST

/* A block freed where no hook saw it (its sample still in the table) whose address comes back
 * sampled: the new sample replaces the old one, which must not stay live for good. */
static void sampled_again(uintptr_t p)
{
    ck_assert(roundtrim_sample_table_insert((void *)p, 2, 3, 200, 0));
    struct seen s;
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.v[0].site, 2);
    remove_is(p, 3, 0, 2, 200);
    ck_assert_uint_eq(scan(&s, 0), 0);
    ck_assert(!removed(p));
    ck_assert(!roundtrim_sample_maybe((void *)p));
}

START_TEST(address_sampled_again_replaces_its_sample)
{
    setup();
    uintptr_t p = 0x7d0000004560;
    ck_assert(roundtrim_sample_table_insert((void *)p, 1, 1, 100, 0));
    sampled_again(p);
}
END_TEST

/* The same, with a removed slot before the old sample on its probe sequence. */
START_TEST(address_sampled_again_behind_a_removed_slot)
{
    setup();
    uintptr_t p[2];
    sample_homes_same(0x7c0000000000, p, 2);
    ck_assert(roundtrim_sample_table_insert((void *)p[0], 9, 1, 900, 0));
    ck_assert(roundtrim_sample_table_insert((void *)p[1], 1, 1, 100, 0));
    remove_is(p[0], 1, 0, 9, 900);
    sampled_again(p[1]);
}
END_TEST

/* A sample live at the end of a round whose record is not written yet is kept after its free,
 * with the round of its free, until that record no longer needs it. */
START_TEST(freed_sample_kept_until_its_record)
{
    setup();
    uintptr_t p = 0x7b0000000100;
    ck_assert(roundtrim_sample_table_insert((void *)p, 5, 1, 500, 0));
    remove_is(p, 3, 1, 5, 500); /* freed in round 3; round 2's record not written */
    ck_assert(!roundtrim_sample_maybe((void *)p));
    ck_assert(!removed(p)); /* freed once */
    struct seen s;
    for (int twice = 0; twice < 2; twice++) {
        ck_assert_uint_eq(scan(&s, 1), 0); /* not live */
        ck_assert_uint_eq(s.n, 1);
        ck_assert_uint_eq(s.v[0].site, 5);
        ck_assert_uint_eq(s.v[0].round, 1);
        ck_assert_uint_eq(s.v[0].freed_in, 3);
        ck_assert_uint_eq(s.v[0].weight, 500);
    }
    scan(&s, 2); /* round 2's record: the last that needs it */
    ck_assert_uint_eq(s.n, 1);
    scan(&s, 2);
    ck_assert_uint_eq(s.n, 0);
}
END_TEST

START_TEST(freed_sample_not_kept_when_no_record_needs_it)
{
    setup();
    ck_assert(roundtrim_sample_table_insert((void *)0x9000, 1, 3, 10, 0));
    remove_is(0x9000, 3, 0, 1, 10); /* allocated in the round it is freed in */
    ck_assert(roundtrim_sample_table_insert((void *)0x9100, 1, 1, 10, 0));
    remove_is(0x9100, 3, 2, 1, 10); /* round 2's record already written */
    struct seen s;
    scan(&s, 0);
    ck_assert_uint_eq(s.n, 0);
}
END_TEST

/* Free tests one byte per address slot: it counts the live samples there and saturates, so that
 * it is never zero while one is live. */
START_TEST(filter_is_never_clear_under_a_live_sample)
{
    setup();
    const int n = 300;          /* more than a byte counts */
    for (int i = 0; i < n; i++) /* every address in one filter slot */
        ck_assert(
            roundtrim_sample_table_insert((void *)(0x10000 + ((uintptr_t)i << 24)), 1, 1, 1, 0));
    for (int i = 0; i < n - 1; i++)
        ck_assert(removed(0x10000 + ((uintptr_t)i << 24)));
    ck_assert(roundtrim_sample_maybe((void *)(0x10000 + ((uintptr_t)(n - 1) << 24))));
}
END_TEST

START_TEST(fork_child_keeps_live_samples_of_no_round)
{
    setup();
    ck_assert(roundtrim_sample_table_insert((void *)0xa000, 1, 4, 10, 0));
    ck_assert(roundtrim_sample_table_insert((void *)0xb000, 2, 4, 20, 0));
    remove_is(0xb000, 6, 0, 2, 20); /* kept */
    roundtrim_sample_table_fork_child();
    struct seen s;
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_uint_eq(s.v[0].site, 1);
    ck_assert_uint_eq(s.v[0].round, 0);
    remove_is(0xa000, 1, 0, 1, 10);
}
END_TEST

/* A block roundtrim allocated while taking a sample: found at its free, with its bytes, never
 * kept for a record nor seen by a scan, and still roundtrim's in a fork child. */
static void own_removed_is(uintptr_t p, uint32_t round, uint32_t reported, uint64_t bytes)
{
    uint32_t site;
    uint64_t got = 0;
    ck_assert_int_eq(roundtrim_sample_table_remove((void *)p, round, reported, &site, &got),
                     ROUNDTRIM_SAMPLE_OWN);
    ck_assert_uint_eq(got, bytes);
    ck_assert(!roundtrim_sample_maybe((void *)p));
    ck_assert(!removed(p));
}

START_TEST(own_block_is_found_at_its_free_and_never_scanned)
{
    setup();
    ck_assert(roundtrim_sample_table_insert((void *)0xc000, 3, 1, 30, 0));
    ck_assert(roundtrim_sample_table_insert_own((void *)0xd000, 24));
    ck_assert(roundtrim_sample_table_insert_own((void *)0xe000, 40));
    ck_assert(roundtrim_sample_maybe((void *)0xd000));
    struct seen s;
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_uint_eq(s.v[0].site, 3);
    own_removed_is(0xd000, 5, 1, 24); /* a sample of round 1 would be kept here */
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.n, 1);
    roundtrim_sample_table_fork_child();
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.n, 1);
    own_removed_is(0xe000, 2, 0, 40);
    remove_is(0xc000, 1, 0, 3, 30);
}
END_TEST

/* A block freed and allocated again at the same address, sampled both times, while the scan
 * reads its slot: the scan must not hand out the first sample's site with the second's weight. */
#define REUSED 0x7a0000000200u

static void free_and_sample_again(void)
{
    remove_is(REUSED, 1, 0, 1, 100);
    ck_assert(roundtrim_sample_table_insert((void *)REUSED, 2, 1, 200, 0));
}

START_TEST(block_reused_while_scanned_is_not_torn)
{
    setup();
    ck_assert(roundtrim_sample_table_insert((void *)REUSED, 1, 1, 100, 0));
    at_window("reading", free_and_sample_again);
    struct seen s;
    scan(&s, 0);
    window_passed();
    for (uint64_t i = 0; i < s.n; i++) /* whole, or left for the next scan */
        ck_assert_uint_eq(s.v[i].weight, s.v[i].site * 100);
    ck_assert_uint_eq(scan(&s, 0), 1);
    ck_assert_uint_eq(s.v[0].site, 2);
    ck_assert_uint_eq(s.v[0].weight, 200);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sample_table");
    TCase *tc = tcase_create("sample_table");
    tcase_add_test(tc, insert_before_init_is_dropped);
    tcase_add_test(tc, insert_then_remove_gives_back_site_and_weight);
    tcase_add_test(tc, unknown_address_is_not_removed);
    tcase_add_test(tc, scan_sees_live_samples);
    tcase_add_test(tc, full_probe_window_drops_the_next_sample);
    tcase_add_test(tc, removed_slot_is_passed_over_then_reused);
    tcase_add_test(tc, address_sampled_again_replaces_its_sample);
    tcase_add_test(tc, address_sampled_again_behind_a_removed_slot);
    tcase_add_test(tc, freed_sample_kept_until_its_record);
    tcase_add_test(tc, freed_sample_not_kept_when_no_record_needs_it);
    tcase_add_test(tc, filter_is_never_clear_under_a_live_sample);
    tcase_add_test(tc, fork_child_keeps_live_samples_of_no_round);
    tcase_add_test(tc, own_block_is_found_at_its_free_and_never_scanned);
    tcase_add_test(tc, block_reused_while_scanned_is_not_torn);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
