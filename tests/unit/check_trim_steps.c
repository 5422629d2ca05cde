/* Trim steps between round ends: when a step trims, how much it waits for on a fast and on a
 * slow machine, in holds or whole, and that one slow reading makes steps smaller, never stops
 * them. */
#include <check.h>
#include <string.h>

#include "policy/cleanup_policy.h"
#include "policy/trim_steps.h"
#include "run_suite.h"
#include "trim_machines.h"

#define MIB (1024ll * 1024ll)

/* The defaults: adaptive, a 100 ms pause limit, a 20 % budget. */
static const struct roundtrim_policy_settings defaults = {
    .adaptive = true,
    .trim_min_bytes = 1 * MIB,
    .trim_min_percent = 1,
    .device_min_bytes = 32 * MIB,
    .budget_percent = 20,
    .pause_us = 100000,
};

struct worker {
    struct roundtrim_policy_state st;
    struct roundtrim_step_base base;
    struct roundtrim_step_inputs in;
};

/* A glibc process whose round end trimmed once, in trim_us, and counted from there; its rounds
 * of 10 s left the budget in credit. */
static void start(struct worker *w, uint64_t trim_us)
{
    memset(w, 0, sizeof *w);
    roundtrim_policy_round_time(&w->st, &defaults, 10000000);
    roundtrim_policy_learn(&w->st, RT_CLEAN_TRIM, true, trim_us, FRAG_FREE_MIB * MIB);
    w->in.cleaning = true;
    w->in.glibc_counted = true;
    w->in.holds_possible = true;
    roundtrim_trim_step_rebase(&w->base, 0);
}

/* The worker's sample once the program has freed freed_mib since the last trim. */
static struct roundtrim_step_plan sample(struct worker *w, int64_t freed_mib)
{
    struct roundtrim_step_plan plan;
    w->in.net_freed = w->base.net_freed + freed_mib * MIB;
    roundtrim_trim_step_decide(&w->st, &defaults, &w->base, &w->in, &plan);
    return plan;
}

/* The least freed heap, in MiB, that makes a step. */
static int64_t step_size_mib(struct worker *w)
{
    for (int64_t mib = 1; mib < 100000; mib++)
        if (sample(w, mib).kind != RT_STEP_NONE)
            return mib;
    return -1;
}

START_TEST(no_step_before_a_trim_taught_the_rate)
{
    struct worker w;
    start(&w, trim_us_fast);
    memset(&w.st, 0, sizeof w.st);
    ck_assert_int_eq(sample(&w, 4096).kind, RT_STEP_NONE);
}
END_TEST

/* The step waits for a trim worth half the pause limit: on the fast machine a quarter GiB, on
 * the slow one some thirty MiB; either way its hold stays under the limit, and where the arenas
 * can be walked it is roundtrim's walk (its pages given back in batches), not a malloc_trim. */
START_TEST(the_step_size_follows_the_machine)
{
    struct worker fast, slow;
    start(&fast, trim_us_fast);
    start(&slow, trim_us_slow);
    int64_t fast_mib = step_size_mib(&fast), slow_mib = step_size_mib(&slow);
    ck_assert_int_ge(fast_mib, 250);
    ck_assert_int_le(fast_mib, 280);
    ck_assert_int_ge(slow_mib, 28);
    ck_assert_int_le(slow_mib, 36);
    struct roundtrim_step_plan p = sample(&fast, fast_mib);
    ck_assert_int_eq(p.kind, RT_STEP_IN_HOLDS);
    ck_assert_uint_ge(p.predicted_pause_us, defaults.pause_us / 2);
    ck_assert_uint_le(p.predicted_pause_us, defaults.pause_us);
    ck_assert_uint_eq(p.freed_bytes, (uint64_t)fast_mib * MIB);
    p = sample(&slow, slow_mib);
    ck_assert_int_eq(p.kind, RT_STEP_IN_HOLDS);
    ck_assert_uint_le(p.predicted_pause_us, defaults.pause_us);
    /* 100 MiB freed: a step on the slow machine, not yet on the fast one. */
    ck_assert_int_eq(sample(&fast, 100).kind, RT_STEP_NONE);
    ck_assert_int_ne(sample(&slow, 100).kind, RT_STEP_NONE);
}
END_TEST

/* A step's hold is one arena's part: with the largest arena a quarter of the heap, a step waits
 * for four times as much. */
START_TEST(the_largest_arena_sets_the_hold)
{
    struct worker w;
    start(&w, trim_us_slow);
    int64_t whole = step_size_mib(&w);
    w.in.largest_arena_permille = FRAG_ARENA_SHARE;
    int64_t quarter = step_size_mib(&w);
    ck_assert_int_ge(quarter, 4 * whole - 4);
    ck_assert_int_le(quarter, 4 * whole + 4);
}
END_TEST

/* A burst of frees between two samples, predicted over the limit: in holds where the arenas can
 * be walked, else left to the round end. */
START_TEST(a_burst_over_the_limit_is_trimmed_in_holds_or_left_to_the_round_end)
{
    struct worker w;
    start(&w, trim_us_slow);
    struct roundtrim_step_plan p = sample(&w, 200); /* 320 ms */
    ck_assert_int_eq(p.kind, RT_STEP_IN_HOLDS);
    ck_assert_uint_gt(p.predicted_pause_us, defaults.pause_us);
    w.in.holds_possible = false;
    ck_assert_int_eq(sample(&w, 200).kind, RT_STEP_NONE);
    ck_assert_int_eq(sample(&w, 40).kind, RT_STEP_WHOLE); /* 64 ms: one trim */
}
END_TEST

/* After a step the count starts again from what is freed then; a heap that grew back over what
 * was freed moves the base without a step. */
START_TEST(a_step_counts_from_where_it_left_the_heap)
{
    struct worker w;
    start(&w, trim_us_fast);
    struct roundtrim_step_plan p = sample(&w, 300);
    ck_assert_int_eq(p.kind, RT_STEP_IN_HOLDS);
    int64_t after = w.in.net_freed;
    /* It gave back 290 MiB in 57 ms. */
    roundtrim_trim_step_done(&w.st, &w.base, &p, 290 * MIB, 57000, 56000, after);
    ck_assert_int_eq(w.base.net_freed, after);
    ck_assert_int_eq(sample(&w, 100).kind, RT_STEP_NONE);
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_IN_HOLDS);
    /* The program allocates again: the heap grows back, nothing is newly free. */
    w.in.net_freed = w.base.net_freed - 500 * MIB;
    roundtrim_trim_step_decide(&w.st, &defaults, &w.base, &w.in, &p);
    ck_assert_int_eq(p.kind, RT_STEP_NONE);
    ck_assert_int_eq(w.base.net_freed, w.in.net_freed);
    /* A round end's trim moves the base too. */
    roundtrim_trim_step_rebase(&w.base, 7 * MIB);
    ck_assert_int_eq(sample(&w, 100).kind, RT_STEP_NONE);
}
END_TEST

/* Steps are the adaptive policy's own: none with the fixed period, cleanup off, no pause limit,
 * another allocator or uncounted traffic, an overdrawn budget, a backed-off trim, or after the
 * program trimmed itself. */
START_TEST(steps_wait_where_the_policy_does_not_trim_on_its_own)
{
    struct worker w;
    start(&w, trim_us_fast);
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_IN_HOLDS);
    struct roundtrim_step_plan p;
    struct roundtrim_policy_settings set = defaults;
    set.adaptive = false;
    w.in.net_freed = w.base.net_freed + 300 * MIB;
    roundtrim_trim_step_decide(&w.st, &set, &w.base, &w.in, &p);
    ck_assert_int_eq(p.kind, RT_STEP_NONE);
    set = defaults;
    set.pause_us = 0;
    roundtrim_trim_step_decide(&w.st, &set, &w.base, &w.in, &p);
    ck_assert_int_eq(p.kind, RT_STEP_NONE);

    w.in.cleaning = false;
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_NONE);
    w.in.cleaning = true;
    w.in.glibc_counted = false;
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_NONE);
    w.in.glibc_counted = true;
    w.in.program_trimmed = true;
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_NONE);
    w.in.program_trimmed = false;

    /* The cleanups spent more than 20 % of the rounds' time; the next rounds earn it back. */
    roundtrim_policy_charge(&w.st, 2100000);
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_NONE);
    roundtrim_policy_round_time(&w.st, &defaults, 1000000);
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_IN_HOLDS);

    /* Two round-end trims that gave nothing back: the trim backs off, and the steps with it. */
    roundtrim_policy_learn(&w.st, RT_CLEAN_TRIM, false, 1000, 10 * MIB);
    roundtrim_policy_learn(&w.st, RT_CLEAN_TRIM, false, 1000, 10 * MIB);
    ck_assert_int_eq(sample(&w, 300).kind, RT_STEP_NONE);
    /* One that gave back: the steps resume (the quick fruitless trims lowered the rate). */
    roundtrim_policy_learn(&w.st, RT_CLEAN_TRIM, true, trim_us_fast, FRAG_FREE_MIB * MIB);
    ck_assert_int_eq(sample(&w, 400).kind, RT_STEP_IN_HOLDS);
}
END_TEST

/* The fast machine, once loaded: one step reads the slow machine's rate. The steps that follow
 * come sooner and smaller (their holds still under the limit), and come back to their size as
 * the fast readings return; a step that gave back little teaches nothing. */
START_TEST(one_slow_reading_makes_steps_smaller_never_stops_them)
{
    struct worker w;
    start(&w, trim_us_fast);
    w.in.holds_possible =
        false; /* whole steps: each teaches the rate (holds learn it hold by hold) */
    int64_t usual = step_size_mib(&w);
    struct roundtrim_step_plan p = sample(&w, usual);
    /* 1.6 ms per MiB for this one. */
    roundtrim_trim_step_done(&w.st, &w.base, &p, (uint64_t)usual * MIB, (uint64_t)usual * 1600,
                             2000, w.in.net_freed);
    int64_t after_slow = step_size_mib(&w);
    ck_assert_int_lt(after_slow, usual / 2);
    ck_assert_int_gt(after_slow, 0);
    p = sample(&w, after_slow);
    ck_assert_uint_le(p.predicted_pause_us, defaults.pause_us);
    /* A step that found little (the program's frees were already given back). */
    uint64_t rate = w.st.trim_rate;
    roundtrim_trim_step_done(&w.st, &w.base, &p, 512 * 1024, 90000, 2000, w.in.net_freed);
    ck_assert_uint_eq(w.st.trim_rate, rate);
    /* Fast readings again: within a few steps, the usual size. */
    int steps = 0;
    for (; steps < 20; steps++) {
        int64_t mib = step_size_mib(&w);
        ck_assert_int_gt(mib, 0);
        if (mib >= usual * 9 / 10)
            break;
        p = sample(&w, mib);
        roundtrim_trim_step_done(&w.st, &w.base, &p, (uint64_t)mib * MIB, (uint64_t)mib * 191, 2000,
                                 w.in.net_freed);
    }
    ck_assert_int_lt(steps, 20);
}
END_TEST

/* The same slow reading at a round end where no holds are possible: the round-end trim is held
 * back (pause_limit) while the steps go on under the limit, and the round end tries again within
 * a few cleanup rounds and measures the rate anew: the trims go back to what they were. */
START_TEST(after_a_slow_reading_the_round_end_backs_off_and_comes_back)
{
    struct worker w;
    start(&w, trim_us_fast);
    w.in.holds_possible = false;
    roundtrim_policy_learn(&w.st, RT_CLEAN_TRIM, true, trim_us_slow * 3, FRAG_FREE_MIB * MIB);
    struct roundtrim_policy_inputs round = {
        .heap_free_known = true,
        .heap_free = FRAG_FREE_MIB * MIB,
        .rss = 1024 * MIB,
        .trim_possible = true,
        .trim_pauses = true,
    };
    int held = 0, retried_at = 0;
    for (int r = 1; r <= 10 && !retried_at; r++) {
        struct roundtrim_policy_plan plan;
        roundtrim_policy_decide(&w.st, &defaults, &round, &plan);
        if (!plan.run[RT_CLEAN_TRIM]) {
            ck_assert_int_eq(plan.skipped[RT_CLEAN_TRIM], RT_SKIP_pause_limit);
            held++;
            /* Meanwhile the steps trim what is freed in pieces under the limit. */
            struct roundtrim_step_plan p = sample(&w, 40);
            ck_assert_int_eq(p.kind, RT_STEP_WHOLE);
            ck_assert_uint_le(p.predicted_pause_us, defaults.pause_us);
            w.base.net_freed = w.in.net_freed;
            continue;
        }
        ck_assert(plan.trim_retry);
        retried_at = r;
        roundtrim_policy_learn(&w.st, RT_CLEAN_TRIM, true, trim_us_fast, FRAG_FREE_MIB * MIB);
    }
    ck_assert_int_gt(held, 0);
    ck_assert_int_gt(retried_at, 0);
    ck_assert_int_le(retried_at, 5);
    struct roundtrim_policy_plan plan;
    roundtrim_policy_decide(&w.st, &defaults, &round, &plan);
    ck_assert(plan.run[RT_CLEAN_TRIM] && !plan.trim_retry);
    ck_assert_int_ge(step_size_mib(&w), 250);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trim_steps");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, no_step_before_a_trim_taught_the_rate);
    tcase_add_test(tc, the_step_size_follows_the_machine);
    tcase_add_test(tc, the_largest_arena_sets_the_hold);
    tcase_add_test(tc, a_burst_over_the_limit_is_trimmed_in_holds_or_left_to_the_round_end);
    tcase_add_test(tc, a_step_counts_from_where_it_left_the_heap);
    tcase_add_test(tc, steps_wait_where_the_policy_does_not_trim_on_its_own);
    tcase_add_test(tc, one_slow_reading_makes_steps_smaller_never_stops_them);
    tcase_add_test(tc, after_a_slow_reading_the_round_end_backs_off_and_comes_back);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
