/* The cost of a page-release call, learnt as the calls go: fed the calls measured on a host where
 * one call costs about 1 us and on one where it costs 60-100 us (page tables virtualized in
 * software), each call of a hold is sized to end within the hold's budget, one slow reading
 * makes the next calls smaller and the fast ones that follow bring them back. */
#include <check.h>
#include <string.h>

#include "policy/release_cost.h"
#include "run_suite.h"

/* Measured (MALLOC-NOTES, 2026-11-29): 25,600 one-page ranges, 1,024 a process_madvise call:
 * 34-112 ms on the dear host (1.3-4.4 us a range), 0.5 us a range on a fast one; one madvise of
 * one page 60-100 us on the dear host, 1.4 us on the fast one; a fragmented heap's 5-page
 * ranges 3-4 us each in batches on the dear host. */
struct host {
    const char *name;
    double call_us, range_us; /* one call's fixed cost, and each range's */
};
static const struct host fast = {"fast", 1.0, 0.5}, dear = {"dear", 80.0, 3.5},
                         dear_loaded = {"dear, loaded", 100.0, 4.4};

/* What a call of n ranges of pages pages each takes on host h. */
static uint64_t call_time(const struct host *h, uint64_t n)
{
    return (uint64_t)(h->call_us + h->range_us * (double)n);
}

/* One hold of budget_us against a free list of ranges of 5 pages: the calls it makes, sized by
 * what was learnt, until its time is up. Returns the ranges given back; *longest the overrun. */
static uint64_t hold(struct roundtrim_release_cost *c, const struct host *h, uint64_t budget_us,
                     uint64_t *spent_us)
{
    uint64_t spent = 0, ranges = 0;
    uint64_t unit = roundtrim_release_units(5);
    while (spent < budget_us) {
        uint64_t fit = roundtrim_release_units_fitting(c, budget_us - spent);
        uint64_t n = fit / unit ? fit / unit : 1;
        if (n > ROUNDTRIM_RELEASE_BATCH_MAX)
            n = ROUNDTRIM_RELEASE_BATCH_MAX;
        uint64_t took = call_time(h, n);
        roundtrim_release_cost_learn(c, n * unit, took);
        spent += took;
        ranges += n;
    }
    *spent_us = spent;
    return ranges;
}

START_TEST(a_first_call_is_small_and_measures)
{
    struct roundtrim_release_cost c;
    memset(&c, 0, sizeof c);
    ck_assert_uint_eq(roundtrim_release_predict_us(&c, 1000), 0);
    uint64_t first = roundtrim_release_units_fitting(&c, 50000);
    ck_assert_uint_gt(first, 0);
    /* On the dearest host measured, that first call still ends well within a 50 ms hold. */
    ck_assert_uint_lt(call_time(&dear_loaded, first), 50000 / 4);
    roundtrim_release_cost_learn(&c, first, call_time(&dear, first));
    ck_assert_uint_gt(c.unit_us_x256, 0);
    ck_assert_uint_eq(c.calls, 1);
}
END_TEST

/* On either host a hold of 50 ms gives back ranges in calls that end near its budget: never more
 * than a quarter past it once the first call has measured the host. */
START_TEST(each_hold_ends_near_its_budget_on_any_host)
{
    const struct host *hosts[] = {&fast, &dear, &dear_loaded};
    for (unsigned k = 0; k < 3; k++) {
        struct roundtrim_release_cost c;
        memset(&c, 0, sizeof c);
        uint64_t spent, ranges;
        hold(&c, hosts[k], 50000, &spent); /* the first hold learns */
        for (int i = 0; i < 10; i++) {
            ranges = hold(&c, hosts[k], 50000, &spent);
            ck_assert_msg(spent <= 50000 + 50000 / 4, "%s: %llu us", hosts[k]->name,
                          (unsigned long long)spent);
            ck_assert_uint_gt(ranges, 0);
        }
    }
}
END_TEST

/* The dear host gives back 10,000 ranges in a few holds, not thousands of calls. */
START_TEST(batches_make_the_dear_host_cheap)
{
    struct roundtrim_release_cost c;
    memset(&c, 0, sizeof c);
    uint64_t spent, ranges = 0, holds = 0;
    while (ranges < 10000) {
        ranges += hold(&c, &dear, 50000, &spent);
        holds++;
    }
    /* 10,000 ranges at 3.5 us: 35 ms of calls, one hold or two; one madvise each would be 0.8 s. */
    ck_assert_uint_le(holds, 3);
    ck_assert_uint_le(c.calls, 40);
    ck_assert_uint_ge(c.call_us_mean, 100);
}
END_TEST

/* A call that met a loaded host (ten times its usual cost) shrinks the next calls; the usual
 * readings that follow bring them back. */
START_TEST(one_slow_reading_shrinks_the_next_calls_never_stops_them)
{
    struct roundtrim_release_cost c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 20; i++)
        roundtrim_release_cost_learn(&c, 1024, call_time(&dear, 1024 / 2));
    uint64_t usual = roundtrim_release_units_fitting(&c, 20000);
    roundtrim_release_cost_learn(&c, 1024, 10 * call_time(&dear, 1024 / 2));
    uint64_t after = roundtrim_release_units_fitting(&c, 20000);
    ck_assert_uint_lt(after, usual * 3 / 4);
    ck_assert_uint_gt(after, 0);
    for (int i = 0; i < 20; i++)
        roundtrim_release_cost_learn(&c, 1024, call_time(&dear, 1024 / 2));
    ck_assert_uint_ge(roundtrim_release_units_fitting(&c, 20000), usual * 9 / 10);
}
END_TEST

/* Where nothing of the budget is left, a call still carries one range: the walk goes on. */
START_TEST(no_budget_left_still_gives_one_range)
{
    struct roundtrim_release_cost c;
    memset(&c, 0, sizeof c);
    roundtrim_release_cost_learn(&c, 100, 8000);
    ck_assert_uint_eq(roundtrim_release_units_fitting(&c, 0), 1);
    ck_assert_uint_eq(roundtrim_release_units(1), 1);
    ck_assert_uint_eq(roundtrim_release_units(64), 5);
    ck_assert_uint_eq(roundtrim_release_predict_us(&c, 100), 8000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("release_cost");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_first_call_is_small_and_measures);
    tcase_add_test(tc, each_hold_ends_near_its_budget_on_any_host);
    tcase_add_test(tc, batches_make_the_dear_host_cheap);
    tcase_add_test(tc, one_slow_reading_shrinks_the_next_calls_never_stops_them);
    tcase_add_test(tc, no_budget_left_still_gives_one_range);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
