/* Which cleanup actions run: the fixed period, the adaptive policy's thresholds, backing off,
 * the CPU budget, the pause limit and memory pressure. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cleanup_policy.h"
#include "policy/json_writer.h"
#include "run_suite.h"
#include "trim_machines.h"

#define MIB (1024ull * 1024ull)

static const struct roundtrim_policy_settings defaults = {
    .adaptive = true,
    .trim_min_bytes = 4 * MIB,
    .trim_min_percent = 1,
    .device_min_bytes = 32 * MIB,
    .budget_percent = 5,
    .pause_us = 100000,
};

/* A round of a glibc Python process with CUDA: everything measured. */
static struct roundtrim_policy_inputs glibc_round(uint64_t heap_free_mib, uint64_t rss_mib)
{
    struct roundtrim_policy_inputs in;
    memset(&in, 0, sizeof in);
    in.heap_free_known = true;
    in.heap_free = heap_free_mib * MIB;
    in.rss = rss_mib * MIB;
    in.trim_possible = true;
    in.trim_pauses = true;
    in.device_known = true;
    return in;
}

static struct roundtrim_policy_plan decide(struct roundtrim_policy_state *st,
                                           const struct roundtrim_policy_settings *set,
                                           const struct roundtrim_policy_inputs *in)
{
    struct roundtrim_policy_plan plan;
    roundtrim_policy_decide(st, set, in, &plan);
    for (int a = 0; a < RT_CLEAN_COUNT; a++)
        ck_assert(plan.run[a] == (plan.skipped[a] == RT_SKIP_NONE));
    return plan;
}

static const char *action_name(enum roundtrim_clean_action a)
{
    return a == RT_CLEAN_GC ? "gc" : a == RT_CLEAN_TRIM ? "trim" : "device";
}

static void ck_skip(const struct roundtrim_policy_plan *p, enum roundtrim_clean_action a,
                    enum roundtrim_skip why)
{
    const char *got = roundtrim_skip_name(p->skipped[a]);
    ck_assert_msg(p->skipped[a] == why, "%s: %s, expected %s", action_name(a), got ? got : "runs",
                  roundtrim_skip_name(why));
}

START_TEST(fixed_period_runs_every_action_whatever_it_gives)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_settings set = defaults;
    set.adaptive = false;
    struct roundtrim_policy_inputs in = glibc_round(0, 100);
    for (int i = 0; i < 10; i++) {
        struct roundtrim_policy_plan p = decide(&st, &set, &in);
        ck_assert(p.run[RT_CLEAN_GC] && p.run[RT_CLEAN_TRIM] && p.run[RT_CLEAN_DEVICE]);
        roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 1000, 0);
        roundtrim_policy_learn(&st, RT_CLEAN_GC, false, 1000, 0);
        roundtrim_policy_charge(&st, 1000000); /* far over any budget */
    }
}
END_TEST

START_TEST(trim_runs_only_when_the_free_heap_clears_both_thresholds)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(3, 100); /* under 4 MiB */
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_little_to_gain);
    in = glibc_round(8, 1000); /* over 4 MiB, under 1% of 1000 MiB */
    p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_little_to_gain);
    in = glibc_round(12, 1000);
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM]);
    /* Not measured: the period decides, as the fixed policy would. */
    in.heap_free_known = false;
    in.heap_free = 0;
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM]);
}
END_TEST

START_TEST(what_the_gc_just_freed_counts_for_the_trim)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* 3 MiB free before the cleanup: not worth a trim by itself... */
    struct roundtrim_policy_inputs in = glibc_round(3, 100);
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_little_to_gain);
    /* ...but the gc then freed 6 MiB more into the heap. */
    roundtrim_policy_after_gc(&st, &defaults, &in, &p, 6 * MIB);
    ck_assert(p.run[RT_CLEAN_TRIM] && p.skipped[RT_CLEAN_TRIM] == RT_SKIP_NONE);
    /* A gc that freed little changes nothing; nor does it undo another reason. */
    p = decide(&st, &defaults, &in);
    roundtrim_policy_after_gc(&st, &defaults, &in, &p, 100 * 1024);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_little_to_gain);
    /* Worth it now, but the budget is spent: it waits. */
    roundtrim_policy_charge(&st, 10000000);
    p = decide(&st, &defaults, &in);
    roundtrim_policy_after_gc(&st, &defaults, &in, &p, 60 * MIB);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_budget);
}
END_TEST

START_TEST(a_trim_that_gives_nothing_twice_backs_off_and_comes_back)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* 40 MiB counted free but pinned between live blocks: every trim returns nothing. */
    struct roundtrim_policy_inputs in = glibc_round(40, 200);
    for (int i = 0; i < 2; i++) {
        ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_TRIM]);
        roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 500, in.heap_free);
    }
    /* Backed off for 4 cleanup rounds: skipped 3 times, tried on the 4th. */
    int ran_at = 0;
    for (int i = 1; i <= 4 && !ran_at; i++) {
        struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
        if (p.run[RT_CLEAN_TRIM])
            ran_at = i;
        else
            ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_no_yield);
    }
    ck_assert_int_eq(ran_at, 4);
    /* Nothing again: the gap doubles to 8. */
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 500, in.heap_free);
    ran_at = 0;
    for (int i = 1; i <= 8 && !ran_at; i++)
        if (decide(&st, &defaults, &in).run[RT_CLEAN_TRIM])
            ran_at = i;
    ck_assert_int_eq(ran_at, 8);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 500, in.heap_free);
    /* The free heap grows by the threshold: tried at once, and a trim that gives resets it. */
    struct roundtrim_policy_inputs more = glibc_round(40 + 4, 200);
    ck_assert(decide(&st, &defaults, &more).run[RT_CLEAN_TRIM]);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, 500, more.heap_free);
    for (int i = 0; i < 5; i++)
        ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_TRIM]);
}
END_TEST

START_TEST(the_gap_of_a_backed_off_action_stops_doubling_at_64)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(40, 200);
    uint64_t gaps[8], n = 0;
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 1, in.heap_free);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 1, in.heap_free);
    while (n < 8) {
        uint64_t i = 1;
        while (!decide(&st, &defaults, &in).run[RT_CLEAN_TRIM])
            i++;
        gaps[n++] = i;
        roundtrim_policy_learn(&st, RT_CLEAN_TRIM, false, 1, in.heap_free);
    }
    const uint64_t want[8] = {4, 8, 16, 32, 64, 64, 64, 64};
    for (int k = 0; k < 8; k++)
        ck_assert_uint_eq(gaps[k], want[k]);
}
END_TEST

START_TEST(gc_follows_the_garbage_collections_find)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(0, 100);
    /* The first cleanup collects: nothing is known yet. */
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
    roundtrim_policy_learn(&st, RT_CLEAN_GC, false, 80000, 0);
    /* The interpreter's own collections ran and found nothing: no cycles are being made. */
    in.gc_evidence = true;
    in.gc_collected = 0;
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_GC, RT_SKIP_no_garbage);
    /* They found some: collect. */
    in.gc_collected = 120;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
    roundtrim_policy_learn(&st, RT_CLEAN_GC, true, 80000, 0);
    /* Ours found some last time: collect again, whatever the evidence. */
    in.gc_collected = 0;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
}
END_TEST

START_TEST(gc_backs_off_when_the_garbage_dies_young)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* The interpreter's young collections keep finding cycles, ours find none left. */
    struct roundtrim_policy_inputs in = glibc_round(0, 100);
    in.gc_evidence = true;
    in.gc_collected = 500;
    for (int i = 0; i < 2; i++) {
        ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
        roundtrim_policy_learn(&st, RT_CLEAN_GC, false, 80000, 0);
    }
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_GC, RT_SKIP_no_yield);
    /* Tried again four cleanup rounds later; finding some brings it back for good. */
    int ran_at = 1;
    while (!decide(&st, &defaults, &in).run[RT_CLEAN_GC])
        ran_at++;
    ck_assert_int_eq(ran_at, 3); /* the skip above was the first of the four */
    roundtrim_policy_learn(&st, RT_CLEAN_GC, true, 80000, 0);
    in.gc_collected = 0;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
}
END_TEST

START_TEST(gc_without_collections_of_its_own_backs_off_on_ours)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(0, 100); /* automatic gc off: no evidence */
    for (int i = 0; i < 2; i++) {
        ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
        roundtrim_policy_learn(&st, RT_CLEAN_GC, false, 80000, 0);
    }
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_GC, RT_SKIP_no_yield);
}
END_TEST

/* A full collection in a PyTorch client (measured: 50-130 ms a round with the GIL held, about
 * twenty objects, tens of KiB freed) does not pay: twice, and it waits like a trim that returned
 * nothing. A cheap one that finds small cycles, or one that frees megabytes, pays. */
START_TEST(a_gc_that_frees_little_for_a_long_pause_is_held_back)
{
    ck_assert(!roundtrim_policy_gc_paid(&defaults, 20, 40 * 1024, 90000));
    ck_assert(!roundtrim_policy_gc_paid(&defaults, 0, 0, 500));
    ck_assert(roundtrim_policy_gc_paid(&defaults, 64, 100 * 1024, 2000));    /* 2 ms: cheap */
    ck_assert(roundtrim_policy_gc_paid(&defaults, 20000, 30 * MIB, 130000)); /* frees 30 MiB */
    struct roundtrim_policy_settings unlimited = defaults;
    unlimited.pause_us = 0; /* no pause limit: whatever finds garbage pays */
    ck_assert(roundtrim_policy_gc_paid(&unlimited, 20, 40 * 1024, 90000));

    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(0, 3000);
    in.gc_evidence = true;
    in.gc_collected = 20; /* the interpreter's own collections find a few cycles */
    for (int i = 0; i < 2; i++) {
        ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_GC]);
        uint64_t took = 50000 + 40000 * (uint64_t)i;
        roundtrim_policy_learn(&st, RT_CLEAN_GC,
                               roundtrim_policy_gc_paid(&defaults, 20, 40 * 1024, took), took, 0);
    }
    int held = 0;
    while (!decide(&st, &defaults, &in).run[RT_CLEAN_GC])
        held++;
    ck_assert_int_eq(held, 3); /* held back, then tried again four cleanup rounds on */
}
END_TEST

START_TEST(the_device_release_waits_for_a_cache_worth_it)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(0, 100);
    in.device_cached = 20 * MIB;
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_DEVICE, RT_SKIP_little_to_gain);
    in.device_cached = 300 * MIB;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_DEVICE]);
    in.device_known = false; /* no PyTorch reading: the period decides */
    in.device_cached = 0;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_DEVICE]);
}
END_TEST

START_TEST(the_budget_holds_cleanups_back_until_rounds_earn_it)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(50, 200);
    /* 1 s rounds, 5%: 50 ms a round. A cleanup of 200 ms CPU is over it for 4 rounds. */
    roundtrim_policy_round_time(&st, &defaults, 1000000);
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_TRIM]);
    roundtrim_policy_charge(&st, 200000);
    int skipped = 0;
    for (;;) {
        roundtrim_policy_round_time(&st, &defaults, 1000000);
        struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
        if (p.run[RT_CLEAN_TRIM])
            break;
        ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_budget);
        ck_skip(&p, RT_CLEAN_GC, RT_SKIP_budget);
        skipped++;
    }
    ck_assert_int_eq(skipped, 2); /* credit -150, -100, -50 ms... runs at 0 */
    /* Idle rounds earn at most ten rounds' worth: 500 ms, not 100 rounds'. */
    for (int i = 0; i < 100; i++)
        roundtrim_policy_round_time(&st, &defaults, 1000000);
    ck_assert_int_eq(st.credit_us, 500000);
    /* No cap: never held back. */
    struct roundtrim_policy_settings uncapped = defaults;
    uncapped.budget_percent = 0;
    roundtrim_policy_charge(&st, 10000000);
    ck_assert(decide(&st, &uncapped, &in).run[RT_CLEAN_TRIM]);
}
END_TEST

/* On a kernel without batched release each free chunk costs a call, 60-100 us on a dear host:
 * the fragmenting workload's trim took 530 ms of CPU a round against a budget that earns 240 ms.
 * In holds it runs for what the budget has left (the walk takes the largest free memory first);
 * a whole trim, which cannot stop part way, waits. */
START_TEST(a_trim_in_holds_the_budget_cannot_cover_runs_for_what_is_left)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_settings set = defaults;
    set.budget_percent = 20;
    struct roundtrim_policy_inputs in = glibc_round(100, 200);
    in.trim_holds_possible = true;
    roundtrim_policy_learn_trim_in_holds(&st, true, 530000, 100 * MIB);
    roundtrim_policy_charge(&st, 530000);
    roundtrim_policy_round_time(&st, &set, 1200000); /* a 1.2 s round earns 240 ms */
    struct roundtrim_policy_plan p = decide(&st, &set, &in);
    ck_assert(p.run[RT_CLEAN_TRIM] && p.trim_in_holds);
    ck_assert_uint_eq(p.trim_budget_us, 240000);
    /* Within its usual cost: no cap. */
    roundtrim_policy_round_time(&st, &set, 1200000);
    roundtrim_policy_round_time(&st, &set, 1200000);
    roundtrim_policy_round_time(&st, &set, 1200000);
    p = decide(&st, &set, &in);
    ck_assert(p.run[RT_CLEAN_TRIM]);
    ck_assert_uint_eq(p.trim_budget_us, 0);
    /* Where no holds are possible it waits for the budget, as before. */
    roundtrim_policy_charge(&st, 2000000);
    roundtrim_policy_round_time(&st, &set, 1200000);
    in.trim_holds_possible = false;
    p = decide(&st, &set, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_budget);
}
END_TEST

START_TEST(a_cheap_action_runs_while_an_expensive_one_waits_for_the_budget)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    struct roundtrim_policy_inputs in = glibc_round(50, 200);
    in.device_cached = 512 * MIB;
    /* Each has run once: the gc took 170 ms, the trim 3 ms, the device release 1 ms. */
    roundtrim_policy_learn(&st, RT_CLEAN_GC, true, 170000, 0);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, 3000, 50 * MIB);
    roundtrim_policy_learn(&st, RT_CLEAN_DEVICE, true, 1000, 0);
    roundtrim_policy_charge(&st, 174000);
    /* 20 ms rounds at 5%: a round earns 1 ms. After one round only the release fits. */
    roundtrim_policy_round_time(&st, &defaults, 20000);
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_GC, RT_SKIP_budget);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_budget);
    ck_assert(p.run[RT_CLEAN_DEVICE]);
    roundtrim_policy_charge(&st, 1000);
    /* Four rounds later (4 ms earned): the release and the trim, never the gc. */
    for (int i = 0; i < 4; i++)
        roundtrim_policy_round_time(&st, &defaults, 20000);
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_DEVICE] && p.run[RT_CLEAN_TRIM]);
    ck_skip(&p, RT_CLEAN_GC, RT_SKIP_budget);
    /* An action that never ran has no known cost: it waits while overdrawn. */
    struct roundtrim_policy_state fresh;
    memset(&fresh, 0, sizeof fresh);
    roundtrim_policy_charge(&fresh, 100000);
    roundtrim_policy_round_time(&fresh, &defaults, 1000000);
    p = decide(&fresh, &defaults, &in);
    ck_skip(&p, RT_CLEAN_DEVICE, RT_SKIP_budget);
}
END_TEST

static struct roundtrim_policy_inputs frag_round(bool holds_possible)
{
    struct roundtrim_policy_inputs in = glibc_round(FRAG_FREE_MIB, 520);
    in.largest_arena_permille = FRAG_ARENA_SHARE;
    in.trim_holds_possible = holds_possible;
    return in;
}

START_TEST(a_trim_over_the_pause_limit_runs_in_holds_on_any_machine)
{
    static const struct {
        uint64_t trim_us;
        bool over;
    } machine[] = {
        {trim_us_fast, false},     /* 21 ms an arena: under 100, still roundtrim's walk */
        {trim_us_fast * 3, false}, /* loaded: 64 ms */
        {trim_us_slow, true},      /* 178 ms an arena */
        {trim_us_slow * 3, true},  /* loaded: 534 ms */
    };
    for (unsigned m = 0; m < sizeof machine / sizeof machine[0]; m++) {
        struct roundtrim_policy_state st;
        memset(&st, 0, sizeof st);
        roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, machine[m].trim_us, FRAG_FREE_MIB * MIB);
        struct roundtrim_policy_inputs in = frag_round(true);
        /* Round after round it runs: the limit shapes how, never whether. */
        for (int round = 0; round < 20; round++) {
            struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
            ck_assert_msg(p.run[RT_CLEAN_TRIM], "machine %u round %d: %s", m, round,
                          roundtrim_skip_name(p.skipped[RT_CLEAN_TRIM]));
            /* In holds on every machine: the walk gives pages back in batches, cheaper than
             * malloc_trim's call a chunk, and never holds past the limit. */
            ck_assert(p.trim_in_holds);
            ck_assert(!p.trim_retry);
            if (machine[m].over)
                ck_assert_uint_gt(p.predicted_pause_us, defaults.pause_us);
            roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, machine[m].trim_us,
                                   p.trim_in_holds ? 0 : FRAG_FREE_MIB * MIB);
            if (p.trim_in_holds) /* each hold teaches the rate: 40 ms giving back 25 MiB */
                roundtrim_policy_learn_hold(&st, machine[m].trim_us * 25 / FRAG_FREE_MIB, 25 * MIB);
        }
    }
}
END_TEST

START_TEST(without_holds_a_trim_held_back_is_tried_again_and_its_rate_measured_anew)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* One trim measured on the slow machine under load: 4.8 ms per MiB. */
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_slow * 3, FRAG_FREE_MIB * MIB);
    struct roundtrim_policy_inputs in = frag_round(false);
    int tried_at[3], tries = 0;
    for (int round = 1; round <= 40 && tries < 3; round++) {
        struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
        if (!p.run[RT_CLEAN_TRIM]) {
            ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_pause_limit);
            ck_assert_uint_gt(p.predicted_pause_us, defaults.pause_us);
            ck_assert_uint_gt(st.pause_held, 0);
            continue;
        }
        ck_assert(p.trim_retry);
        tried_at[tries++] = round;
        /* The machine is as slow as it was: held back again, for twice as long. */
        roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_slow * 3, FRAG_FREE_MIB * MIB);
    }
    ck_assert_int_eq(tries, 3);
    ck_assert_int_eq(tried_at[0], 5);
    ck_assert_int_eq(tried_at[1], 5 + 9);
    ck_assert_int_eq(tried_at[2], 5 + 9 + 17);
    /* The load passes: the next try measures the fast machine's rate and takes it whole (not a
     * quarter of it, as a running mean would): the trims that follow run again. */
    memset(&st, 0, sizeof st);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_slow * 3, FRAG_FREE_MIB * MIB);
    int round = 1;
    struct roundtrim_policy_plan p;
    for (; !(p = decide(&st, &defaults, &in)).run[RT_CLEAN_TRIM]; round++)
        ck_assert_int_lt(round, 10);
    ck_assert(p.trim_retry);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_fast, FRAG_FREE_MIB * MIB);
    ck_assert_uint_eq(st.trim_rate, trim_us_fast / FRAG_FREE_MIB);
    for (int i = 0; i < 5; i++) {
        p = decide(&st, &defaults, &in);
        ck_assert(p.run[RT_CLEAN_TRIM] && !p.trim_retry && !p.trim_in_holds);
    }
}
END_TEST

START_TEST(a_slow_hold_shortens_the_next_and_an_idle_program_gets_longer_ones)
{
    const struct roundtrim_policy_settings *set = &defaults; /* a 100 ms limit */
    uint64_t b = roundtrim_policy_next_hold_us(set, 0, 0, false);
    ck_assert_uint_eq(b, 50000); /* the first: half the limit */
    /* Slower than its budget (the worker lost its CPU while holding the lock): half as long. */
    b = roundtrim_policy_next_hold_us(set, b, 80000, true);
    ck_assert_uint_eq(b, 25000);
    b = roundtrim_policy_next_hold_us(set, b, 3 * 25000, false);
    ck_assert_uint_eq(b, 12500);
    /* Never under a sixteenth of the limit: a hold must get something done. */
    for (int i = 0; i < 10; i++)
        b = roundtrim_policy_next_hold_us(set, b, 10 * b, false);
    ck_assert_uint_eq(b, 6250);
    /* On time and nobody waited: back up, to three quarters of the limit at most. */
    b = roundtrim_policy_next_hold_us(set, b, b, false);
    ck_assert_uint_eq(b, 12500);
    for (int i = 0; i < 10; i++)
        b = roundtrim_policy_next_hold_us(set, b, b, false);
    ck_assert_uint_eq(b, 75000);
    /* A thread of the program waited for the lock: half the limit again. */
    b = roundtrim_policy_next_hold_us(set, b, b, true);
    ck_assert_uint_eq(b, 50000);
    b = roundtrim_policy_next_hold_us(set, b, b, true);
    ck_assert_uint_eq(b, 50000);
    /* A tiny limit still leaves half a millisecond. */
    struct roundtrim_policy_settings tiny = defaults;
    tiny.pause_us = 1000;
    ck_assert_uint_eq(roundtrim_policy_next_hold_us(&tiny, 0, 0, false), 500);
    ck_assert_uint_eq(roundtrim_policy_next_hold_us(&tiny, 500, 5000, false), 500);
}
END_TEST

START_TEST(every_hold_teaches_the_rate)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* Learnt on a quiet fast machine, then the holds meet the slow machine's rate. */
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_fast, FRAG_FREE_MIB * MIB);
    ck_assert_uint_eq(st.trim_rate, 191);
    for (int i = 0; i < 20; i++)
        roundtrim_policy_learn_hold(&st, 1600 * 30, 30 * MIB);
    ck_assert_uint_gt(st.trim_rate, 1550);
    ck_assert_uint_le(st.trim_rate, 1600);
    /* A hold that gave back under a MiB (pages given back before) teaches nothing. */
    uint64_t rate = st.trim_rate;
    roundtrim_policy_learn_hold(&st, 50000, MIB / 2);
    ck_assert_uint_eq(st.trim_rate, rate);
    /* One slow hold under load moves the rate a quarter of the way, not all of it. */
    roundtrim_policy_learn_hold(&st, 3 * 1600 * 30, 30 * MIB);
    ck_assert_uint_lt(st.trim_rate, 2 * 1600);
}
END_TEST

START_TEST(a_trim_predicted_to_hold_the_heap_too_long_waits_where_no_holds_are_possible)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    /* This process's trims took 2 ms per MiB of freed heap. */
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, 100000, 50 * MIB);
    ck_assert_uint_eq(st.trim_rate, 2000);
    struct roundtrim_policy_inputs in = glibc_round(40, 400); /* 80 ms: under 100 */
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM] && !p.trim_in_holds);
    in = glibc_round(80, 400); /* 160 ms */
    p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_pause_limit);
    ck_assert_uint_eq(p.predicted_pause_us, 160000);
    /* Where the arenas can be walked, it runs in holds. */
    in.trim_holds_possible = true;
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM] && p.trim_in_holds);
    ck_assert_uint_eq(st.pause_held, 0);
    /* jemalloc's purge holds no lock over the whole heap: no limit applies. */
    in.trim_holds_possible = false;
    in.trim_pauses = false;
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM] && !p.trim_in_holds);
    /* Nor with the limit off. */
    struct roundtrim_policy_settings unlimited = defaults;
    unlimited.pause_us = 0;
    in.trim_pauses = true;
    p = decide(&st, &unlimited, &in);
    ck_assert(p.run[RT_CLEAN_TRIM] && !p.trim_in_holds);
}
END_TEST

/* A program that called malloc_trim itself since the last cleanup (NVFlare's clients do, at
 * their round ends) left glibc's heap nothing to return: the trim says so, even one the pause
 * limit would have done in holds; jemalloc's purge, the fixed period and pressure are not
 * concerned. */
START_TEST(a_program_that_trims_itself_leaves_the_trim_nothing_to_do)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, trim_us_slow, FRAG_FREE_MIB * MIB);
    struct roundtrim_policy_inputs in = frag_round(true);
    in.program_trimmed = true;
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_skip(&p, RT_CLEAN_TRIM, RT_SKIP_program_trim);
    ck_assert(!p.trim_in_holds);
    ck_assert_uint_eq(p.predicted_pause_us, 0);
    ck_assert(p.run[RT_CLEAN_GC]);
    in.trim_pauses = in.trim_holds_possible = false; /* jemalloc */
    p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_TRIM]);
    in = frag_round(true);
    in.program_trimmed = true;
    struct roundtrim_policy_settings fixed = defaults;
    fixed.adaptive = false;
    ck_assert(decide(&st, &fixed, &in).run[RT_CLEAN_TRIM]);
    in.pressure = true;
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_TRIM]);
    /* Not since: the trim is judged as usual. */
    in = frag_round(true);
    ck_assert(decide(&st, &defaults, &in).run[RT_CLEAN_TRIM]);
}
END_TEST

START_TEST(memory_pressure_runs_everything)
{
    struct roundtrim_policy_state st;
    memset(&st, 0, sizeof st);
    roundtrim_policy_learn(&st, RT_CLEAN_TRIM, true, 100000, 10 * MIB);
    for (int i = 0; i < 2; i++)
        roundtrim_policy_learn(&st, RT_CLEAN_GC, false, 1, 0);
    roundtrim_policy_charge(&st, 10000000);
    struct roundtrim_policy_inputs in = glibc_round(1000, 2000); /* a 10 s trim foreseen */
    in.pressure = true;
    struct roundtrim_policy_plan p = decide(&st, &defaults, &in);
    ck_assert(p.run[RT_CLEAN_GC] && p.run[RT_CLEAN_TRIM] && p.run[RT_CLEAN_DEVICE]);
}
END_TEST

START_TEST(the_record_gives_the_cpu_share_with_two_decimals)
{
    char buf[256];
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, sizeof buf);
    roundtrim_json_percent(&j, "a", 1234, 10000);
    roundtrim_json_percent(&j, "b", 1, 3);
    roundtrim_json_percent(&j, "c", 5, 0);
    roundtrim_json_percent(&j, "d", 3000000, 1000000);
    ck_assert(roundtrim_json_end(&j) > 0);
    ck_assert_str_eq(buf, "{\"a\":12.34,\"b\":33.33,\"c\":null,\"d\":300.00}\n");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cleanup_policy");
    TCase *tc = tcase_create("cleanup_policy");
    tcase_add_test(tc, fixed_period_runs_every_action_whatever_it_gives);
    tcase_add_test(tc, trim_runs_only_when_the_free_heap_clears_both_thresholds);
    tcase_add_test(tc, what_the_gc_just_freed_counts_for_the_trim);
    tcase_add_test(tc, a_trim_that_gives_nothing_twice_backs_off_and_comes_back);
    tcase_add_test(tc, the_gap_of_a_backed_off_action_stops_doubling_at_64);
    tcase_add_test(tc, gc_follows_the_garbage_collections_find);
    tcase_add_test(tc, gc_backs_off_when_the_garbage_dies_young);
    tcase_add_test(tc, gc_without_collections_of_its_own_backs_off_on_ours);
    tcase_add_test(tc, the_device_release_waits_for_a_cache_worth_it);
    tcase_add_test(tc, the_budget_holds_cleanups_back_until_rounds_earn_it);
    tcase_add_test(tc, a_cheap_action_runs_while_an_expensive_one_waits_for_the_budget);
    tcase_add_test(tc,
                   a_trim_predicted_to_hold_the_heap_too_long_waits_where_no_holds_are_possible);
    tcase_add_test(tc, a_trim_over_the_pause_limit_runs_in_holds_on_any_machine);
    tcase_add_test(tc, without_holds_a_trim_held_back_is_tried_again_and_its_rate_measured_anew);
    tcase_add_test(tc, a_slow_hold_shortens_the_next_and_an_idle_program_gets_longer_ones);
    tcase_add_test(tc, every_hold_teaches_the_rate);
    tcase_add_test(tc, a_program_that_trims_itself_leaves_the_trim_nothing_to_do);
    tcase_add_test(tc, memory_pressure_runs_everything);
    tcase_add_test(tc, a_gc_that_frees_little_for_a_long_pause_is_held_back);
    tcase_add_test(tc, a_trim_in_holds_the_budget_cannot_cover_runs_for_what_is_left);
    tcase_add_test(tc, the_record_gives_the_cpu_share_with_two_decimals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
