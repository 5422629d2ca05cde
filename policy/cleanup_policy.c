#include "policy/cleanup_policy.h"

#include <stddef.h>
#include <string.h>

#define MIB (1024u * 1024u)

/* Runs in a row that gave nothing back before an action backs off. */
#define FRUITLESS_TO_BACK_OFF 2
/* Cleanup rounds between two tries of a backed-off action: doubling from the first to the last. */
#define PROBE_GAP_FIRST 4
#define PROBE_GAP_LAST  64
/* The budget keeps at most this many rounds' worth of unspent credit. */
#define CREDIT_ROUNDS 10
/* The shortest hold of a trim in holds: a share of the limit, and never under this. */
#define HOLD_MIN_US     500
#define HOLD_MIN_SHARES 16
/* A collection pays when it frees this much, or holds the GIL under this share of the limit. */
#define GC_PAYS_BYTES   MIB
#define GC_CHEAP_SHARES 10
/* A trim over budget runs in part when what is left is at least this share of its usual cost. */
#define PARTIAL_TRIM_SHARE 4

static bool backed_off(const struct roundtrim_action_history *h)
{
    return h->probe_gap > 0;
}

/* A backed-off action comes back for one try when its gap has passed, or when its measure grew
 * by the threshold since it backed off (the program began to free differently). */
static bool try_again(struct roundtrim_action_history *h, bool measured, uint64_t measure,
                      uint64_t threshold)
{
    h->considered++;
    if (h->considered >= h->probe_gap)
        return true;
    return measured && measure >= h->measure_at_off + threshold;
}

static uint64_t trim_threshold(const struct roundtrim_policy_settings *set, uint64_t rss)
{
    uint64_t share = rss / 100 * set->trim_min_percent;
    return share > set->trim_min_bytes ? share : set->trim_min_bytes;
}

/* A whole trim (no trim in holds possible here) predicted to hold an arena past the limit: held
 * back, and tried anyway after a gap of held-back cleanup rounds that doubles (4 to 64): the
 * rate it was judged by is measured again, so no one slow reading stops it for good. */
static enum roundtrim_skip over_the_limit(struct roundtrim_policy_state *st,
                                          struct roundtrim_policy_plan *plan)
{
    if (st->pause_retry_gap == 0)
        st->pause_retry_gap = PROBE_GAP_FIRST;
    if (++st->pause_held <= st->pause_retry_gap)
        return RT_SKIP_pause_limit;
    st->pause_held = 0;
    st->pause_retry_gap =
        st->pause_retry_gap * 2 > PROBE_GAP_LAST ? PROBE_GAP_LAST : st->pause_retry_gap * 2;
    plan->trim_retry = true;
    st->remeasure = true;
    return RT_SKIP_NONE;
}

static enum roundtrim_skip decide_trim(struct roundtrim_policy_state *st,
                                       const struct roundtrim_policy_settings *set,
                                       const struct roundtrim_policy_inputs *in,
                                       struct roundtrim_policy_plan *plan)
{
    uint64_t *pause = &plan->predicted_pause_us;
    struct roundtrim_action_history *h = &st->act[RT_CLEAN_TRIM];
    if (!in->heap_free_known)
        return RT_SKIP_NONE; /* nothing to judge by: the period decides */
    uint64_t threshold = trim_threshold(set, in->rss);
    if (backed_off(h) && !try_again(h, true, in->heap_free, threshold))
        return RT_SKIP_no_yield;
    if (in->heap_free < threshold)
        return RT_SKIP_little_to_gain;
    if (in->trim_pauses && set->pause_us > 0 && st->trim_rate > 0) {
        /* The trim takes one arena's lock at a time: a thread waits for its arena's part. */
        uint64_t share = in->largest_arena_permille ? in->largest_arena_permille : 1000;
        *pause = st->trim_rate * (in->heap_free / MIB) * share / 1000;
    }
    if (in->trim_pauses && set->pause_us > 0 && in->trim_holds_possible) {
        /* roundtrim's own walk, whatever the prediction: each hold under the limit, and the
         * pages given back many ranges a system call where the kernel allows, where glibc's
         * trim makes one call a free chunk (the call is what costs, up to 100 us on some
         * hosts). It measures the rate as it goes. */
        plan->trim_in_holds = true;
        st->pause_held = 0;
        return RT_SKIP_NONE;
    }
    if (*pause > set->pause_us && set->pause_us > 0)
        return over_the_limit(st, plan);
    st->pause_held = 0;
    return RT_SKIP_NONE;
}

static enum roundtrim_skip decide_gc(struct roundtrim_policy_state *st,
                                     const struct roundtrim_policy_inputs *in)
{
    struct roundtrim_action_history *h = &st->act[RT_CLEAN_GC];
    if (h->runs == 0 || h->last_gave)
        return RT_SKIP_NONE;
    /* Ours found nothing twice: the program's garbage, if any, dies young and the interpreter's
     * own collections take it. Tried again on the gaps. */
    if (backed_off(h))
        return try_again(h, false, 0, 0) ? RT_SKIP_NONE : RT_SKIP_no_yield;
    /* The interpreter's own collections ran and found nothing: no cycles are being made. */
    if (in->gc_evidence && in->gc_collected == 0)
        return RT_SKIP_no_garbage;
    return RT_SKIP_NONE; /* they found some, or cannot tell (automatic gc off): one more try */
}

static enum roundtrim_skip decide_device(struct roundtrim_policy_state *st,
                                         const struct roundtrim_policy_settings *set,
                                         const struct roundtrim_policy_inputs *in)
{
    struct roundtrim_action_history *h = &st->act[RT_CLEAN_DEVICE];
    if (!in->device_known)
        return RT_SKIP_NONE;
    if (backed_off(h) && !try_again(h, true, in->device_cached, set->device_min_bytes))
        return RT_SKIP_no_yield;
    if (in->device_cached < set->device_min_bytes)
        return RT_SKIP_little_to_gain;
    return RT_SKIP_NONE;
}

/* Over budget, a trim in holds that does not fit whole runs for what is left, where that is a
 * good part of its usual cost (a walk has a cost of its own, whatever it gives back: a sliver
 * of an allowance would overdraw the budget round after round). */
static bool partial_trim_worth(const struct roundtrim_policy_state *st,
                               const struct roundtrim_policy_plan *plan)
{
    const struct roundtrim_action_history *h = &st->act[RT_CLEAN_TRIM];
    return plan->trim_in_holds && h->runs > 0 && plan->allowance_us > 0 &&
           (uint64_t)plan->allowance_us >= h->cost_us / PARTIAL_TRIM_SHARE;
}

/* Over budget: an action that ran before and costs what is left of this round's allowance. */
static bool afford(const struct roundtrim_policy_state *st, struct roundtrim_policy_plan *plan,
                   int a)
{
    const struct roundtrim_action_history *h = &st->act[a];
    if (h->runs == 0 || (int64_t)h->cost_us > plan->allowance_us)
        return false;
    plan->allowance_us -= (int64_t)h->cost_us;
    return true;
}

void roundtrim_policy_decide(struct roundtrim_policy_state *st,
                             const struct roundtrim_policy_settings *set,
                             const struct roundtrim_policy_inputs *in,
                             struct roundtrim_policy_plan *plan)
{
    for (int a = 0; a < RT_CLEAN_COUNT; a++) {
        plan->run[a] = true;
        plan->skipped[a] = RT_SKIP_NONE;
    }
    plan->predicted_pause_us = 0;
    plan->trim_budget_us = 0;
    plan->trim_in_holds = plan->trim_retry = false;
    if (!set->adaptive || in->pressure)
        return;
    plan->skipped[RT_CLEAN_GC] = decide_gc(st, in);
    plan->skipped[RT_CLEAN_TRIM] =
        in->trim_possible ? decide_trim(st, set, in, plan) : RT_SKIP_NONE;
    plan->skipped[RT_CLEAN_DEVICE] = decide_device(st, set, in);
    /* The budget: while the cleanups so far spent more than their share of the rounds' time,
     * what is worth running runs only if its usual cost fits in what the rounds since the last
     * cleanup round earned, cheapest first (the credit then does not sink further). */
    plan->allowance_us = st->earned_us;
    st->earned_us = 0;
    bool over_budget = set->budget_percent > 0 && st->credit_us < 0;
    bool judged[RT_CLEAN_COUNT] = {false};
    for (int n = 0; n < RT_CLEAN_COUNT; n++) {
        int cheapest = -1;
        for (int a = 0; a < RT_CLEAN_COUNT; a++)
            if (!judged[a] && (cheapest < 0 || st->act[a].cost_us < st->act[cheapest].cost_us))
                cheapest = a;
        judged[cheapest] = true;
        if (!plan->skipped[cheapest] && over_budget && !afford(st, plan, cheapest)) {
            if (cheapest == RT_CLEAN_TRIM && partial_trim_worth(st, plan)) {
                /* Holds can stop anywhere: the trim spends what is left, on the largest free
                 * runs first (where each release call is dear, on kernels without batches). */
                plan->trim_budget_us = (uint64_t)plan->allowance_us;
                plan->allowance_us = 0;
            } else {
                plan->skipped[cheapest] = RT_SKIP_budget;
            }
        }
        plan->run[cheapest] = plan->skipped[cheapest] == RT_SKIP_NONE;
    }
    /* The program trimmed glibc's heap itself since the last cleanup: nothing is left to return
     * (its share of the allowance stays spent, as if it had run). */
    if (in->program_trimmed && in->trim_pauses) {
        plan->run[RT_CLEAN_TRIM] = plan->trim_in_holds = false;
        plan->trim_budget_us = 0;
        plan->skipped[RT_CLEAN_TRIM] = RT_SKIP_program_trim;
        plan->predicted_pause_us = 0;
    }
}

void roundtrim_policy_after_gc(struct roundtrim_policy_state *st,
                               const struct roundtrim_policy_settings *set,
                               const struct roundtrim_policy_inputs *in,
                               struct roundtrim_policy_plan *plan, uint64_t gc_freed)
{
    enum roundtrim_skip why = plan->skipped[RT_CLEAN_TRIM];
    if (!set->adaptive || gc_freed == 0 || why != RT_SKIP_little_to_gain ||
        backed_off(&st->act[RT_CLEAN_TRIM]))
        return;
    /* What the collection just freed lies in the heap now: judged again with it. (A trim left
     * out for little_to_gain was not backed off, so this judges without side effects.) */
    struct roundtrim_policy_inputs after = *in;
    after.heap_free += gc_freed;
    plan->predicted_pause_us = 0;
    why = decide_trim(st, set, &after, plan);
    if (!why && set->budget_percent > 0 && st->credit_us < 0 && !afford(st, plan, RT_CLEAN_TRIM)) {
        if (partial_trim_worth(st, plan)) {
            plan->trim_budget_us = (uint64_t)plan->allowance_us;
            plan->allowance_us = 0;
        } else {
            why = RT_SKIP_budget;
        }
    }
    plan->skipped[RT_CLEAN_TRIM] = why;
    plan->run[RT_CLEAN_TRIM] = why == RT_SKIP_NONE;
}

static void learn(struct roundtrim_policy_state *st, enum roundtrim_clean_action a, bool gave_back,
                  uint64_t took_us, uint64_t measure_before, bool rate);

bool roundtrim_policy_gc_paid(const struct roundtrim_policy_settings *set, uint64_t collected,
                              uint64_t freed_bytes, uint64_t took_us)
{
    if (collected == 0)
        return false;
    if (freed_bytes >= GC_PAYS_BYTES || set->pause_us == 0)
        return true;
    return took_us < set->pause_us / GC_CHEAP_SHARES;
}

void roundtrim_policy_learn(struct roundtrim_policy_state *st, enum roundtrim_clean_action a,
                            bool gave_back, uint64_t took_us, uint64_t measure_before)
{
    learn(st, a, gave_back, took_us, measure_before, true);
}

void roundtrim_policy_learn_trim_in_holds(struct roundtrim_policy_state *st, bool gave_back,
                                          uint64_t took_us, uint64_t measure_before)
{
    learn(st, RT_CLEAN_TRIM, gave_back, took_us, measure_before, false);
}

static void learn(struct roundtrim_policy_state *st, enum roundtrim_clean_action a, bool gave_back,
                  uint64_t took_us, uint64_t measure_before, bool rate)
{
    struct roundtrim_action_history *h = &st->act[a];
    h->runs++;
    h->last_gave = gave_back;
    h->cost_us = h->cost_us ? (h->cost_us * 3 + took_us) / 4 : took_us;
    if (h->cost_us == 0)
        h->cost_us = 1; /* it ran: known, and cheap */
    if (a == RT_CLEAN_TRIM && rate && measure_before >= MIB) {
        /* The trim's time grows with the freed heap it walks and returns: a running mean of
         * this process's own rate predicts the next one's pause. */
        uint64_t rate = took_us / (measure_before / MIB);
        st->trim_rate = st->trim_rate && !st->remeasure ? (st->trim_rate * 3 + rate) / 4 : rate;
        st->remeasure = false;
        if (st->trim_rate == 0)
            st->trim_rate = 1; /* known, and fast: 0 would mean "unknown" */
    }
    if (gave_back) {
        h->fruitless = 0;
        h->probe_gap = 0;
        h->considered = 0;
        return;
    }
    h->fruitless++;
    if (backed_off(h)) {
        /* A try that found nothing again: wait twice as long for the next. */
        h->probe_gap = h->probe_gap * 2 > PROBE_GAP_LAST ? PROBE_GAP_LAST : h->probe_gap * 2;
    } else if (h->fruitless >= FRUITLESS_TO_BACK_OFF) {
        h->probe_gap = PROBE_GAP_FIRST;
    }
    h->considered = 0;
    h->measure_at_off = measure_before;
}

uint64_t roundtrim_policy_next_hold_us(const struct roundtrim_policy_settings *set,
                                       uint64_t budget_us, uint64_t took_us, bool waited)
{
    uint64_t limit = set->pause_us, half = limit / 2;
    uint64_t floor = limit / HOLD_MIN_SHARES > HOLD_MIN_US ? limit / HOLD_MIN_SHARES : HOLD_MIN_US;
    if (budget_us == 0)
        return half > floor ? half : floor;
    if (took_us > budget_us + budget_us / 4)
        return budget_us / 2 > floor ? budget_us / 2 : floor;
    if (waited)
        return half < budget_us ? (half > floor ? half : floor) : budget_us;
    uint64_t most = limit - limit / 4; /* a hold may run past its budget by a few chunks */
    return budget_us * 2 < most ? budget_us * 2 : (most > floor ? most : floor);
}

void roundtrim_policy_learn_hold(struct roundtrim_policy_state *st, uint64_t took_us,
                                 uint64_t released)
{
    if (released < MIB)
        return; /* little given back: the walk of chunks given back before, no rate */
    uint64_t rate = took_us / (released / MIB);
    st->trim_rate = st->trim_rate ? (st->trim_rate * 3 + rate) / 4 : rate;
    if (st->trim_rate == 0)
        st->trim_rate = 1;
}

void roundtrim_policy_round_time(struct roundtrim_policy_state *st,
                                 const struct roundtrim_policy_settings *set, uint64_t round_us)
{
    if (set->budget_percent == 0)
        return;
    int64_t earned = (int64_t)(round_us / 100 * set->budget_percent);
    int64_t cap = earned * CREDIT_ROUNDS;
    st->credit_us += earned;
    st->earned_us += earned;
    if (st->credit_us > cap)
        st->credit_us = cap;
    if (st->earned_us > cap) /* rounds without a cleanup (the period off) */
        st->earned_us = cap;
}

void roundtrim_policy_charge(struct roundtrim_policy_state *st, uint64_t cpu_us)
{
    st->credit_us -= (int64_t)cpu_us;
}
