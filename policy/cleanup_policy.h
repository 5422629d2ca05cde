/* Which cleanup actions a cleanup round runs, and why the others do not.
 *
 * The fixed period runs every action on every ROUNDTRIM_GC_ROUNDS-th round. The adaptive policy
 * looks at the same rounds but runs each action only when it gives memory back:
 *   trim/purge  when the freed heap the allocator keeps resident is worth it (bytes and share of
 *               RSS), and its predicted pause fits the pause limit;
 *   gc          when collections find garbage: ours last time, or the interpreter's own; one
 *               that found some but freed under a MiB while it held the GIL past a tenth of
 *               the pause limit did not pay, and counts as giving nothing back;
 *   device      when the PyTorch cache and the driver's pools hold enough;
 * (a glibc trim not when the program trimmed the heap itself since the last cleanup);
 * all within a budget of cleanup CPU time per round time: while the cleanups so far spent more
 * than their share, an action runs only if its usual cost fits in what the rounds since the last
 * cleanup earned (cheapest first), so an expensive gc never holds back a cheap cache release; a
 * trim in holds that does not fit runs for what is left, largest free memory first. An
 * action that gave nothing back twice
 * in a row backs off: it is tried again when its measure has grown by its threshold since, or
 * after a gap that doubles (4 to 64 cleanup rounds). Memory pressure always runs everything.
 * Pure: the caller measures and runs; this file decides and learns. */
#ifndef ROUNDTRIM_POLICY_CLEANUP_POLICY_H
#define ROUNDTRIM_POLICY_CLEANUP_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

enum roundtrim_clean_action {
    RT_CLEAN_GC,     /* Python's full collection */
    RT_CLEAN_TRIM,   /* glibc malloc_trim or jemalloc purge */
    RT_CLEAN_DEVICE, /* PyTorch's empty_cache and the driver's pool trim */
    RT_CLEAN_COUNT
};

struct roundtrim_policy_settings {
    bool adaptive;             /* false: the fixed period */
    uint64_t trim_min_bytes;   /* freed heap below this is not worth a trim */
    uint64_t trim_min_percent; /* nor below this share of RSS */
    uint64_t device_min_bytes; /* device cache below this is not worth a release */
    uint64_t budget_percent;   /* cleanup CPU per round time; 0: no cap */
    uint64_t pause_us;         /* the longest a trim may hold the heap; 0: no limit */
};

/* What one action has shown so far. */
struct roundtrim_action_history {
    uint64_t runs;
    uint64_t fruitless;      /* runs in a row that gave nothing back */
    bool last_gave;          /* the last run gave something back */
    uint64_t considered;     /* cleanup rounds that looked at it since it backed off */
    uint64_t probe_gap;      /* while backed off: cleanup rounds between two tries */
    uint64_t measure_at_off; /* its measure when it backed off */
    uint64_t cost_us;        /* what a run takes, a running mean; 0 before it first ran */
};

struct roundtrim_policy_state {
    struct roundtrim_action_history act[RT_CLEAN_COUNT];
    int64_t credit_us;  /* cleanup CPU the budget still allows (may go below zero) */
    int64_t earned_us;  /* what the rounds since the last cleanup round earned */
    uint64_t trim_rate; /* trim wall time per MiB of freed heap it met, microseconds; 0 unknown */
    /* Trims the pause limit held back in a row (where no trim in holds is possible), and the
     * cleanup rounds after which one is tried anyway, its rate measured again. */
    uint64_t pause_held, pause_retry_gap;
    bool remeasure; /* the next trim's rate replaces the one it was held back by */
};

/* What the round measured before its cleanup. A measure that is not known lets its action run
 * on the period, as the fixed policy would. */
struct roundtrim_policy_inputs {
    bool pressure;        /* a pressure cleanup: everything runs, budget or not */
    bool heap_free_known; /* the allocator's freed-and-resident heap */
    uint64_t heap_free, rss;
    uint32_t largest_arena_permille; /* the largest arena's share of it (0: unknown, all) */
    bool trim_possible;              /* the allocator has a release (glibc, jemalloc) */
    bool trim_pauses;                /* the release holds the heap's locks while it works (glibc) */
    bool trim_holds_possible;        /* it can be done in holds each under the limit */
    bool program_trimmed;            /* the program called malloc_trim since the last cleanup */
    bool gc_evidence;                /* the interpreter's own collections ran since the last look */
    uint64_t gc_collected;           /* and the objects they found */
    bool device_known;
    uint64_t device_cached;
};

struct roundtrim_policy_plan {
    bool run[RT_CLEAN_COUNT];
    enum roundtrim_skip skipped[RT_CLEAN_COUNT]; /* why an action does not run */
    uint64_t predicted_pause_us;                 /* the trim's, when it was predicted */
    bool trim_in_holds;   /* predicted over the pause limit: done in holds, each under it */
    bool trim_retry;      /* held back too long: tried anyway, its rate measured again */
    int64_t allowance_us; /* while overdrawn: what cheap actions may still spend this round */
    /* A trim in holds the budget cannot cover whole: the hold time it may spend (0: no cap).
     * Its walk goes largest free memory first, so the part it does returns the most. */
    uint64_t trim_budget_us;
};

/* Decides one cleanup round. */
void roundtrim_policy_decide(struct roundtrim_policy_state *st,
                             const struct roundtrim_policy_settings *set,
                             const struct roundtrim_policy_inputs *in,
                             struct roundtrim_policy_plan *plan);

/* After the gc freed gc_freed bytes: a trim left out for little_to_gain is judged again with
 * them added to the freed heap (they lie there now). */
void roundtrim_policy_after_gc(struct roundtrim_policy_state *st,
                               const struct roundtrim_policy_settings *set,
                               const struct roundtrim_policy_inputs *in,
                               struct roundtrim_policy_plan *plan, uint64_t gc_freed);

/* After an action ran: whether it gave something back, what it took (its usual cost, which the
 * budget weighs; the trim's and the gc's wall time, which they spend on CPU holding a lock, the
 * device release's CPU time), and its measure before it ran (the trim's freed heap, which with
 * the wall time teaches the trim's rate). */
void roundtrim_policy_learn(struct roundtrim_policy_state *st, enum roundtrim_clean_action a,
                            bool gave_back, uint64_t took_us, uint64_t measure_before);

/* Whether a collection paid for itself: it found garbage, and freed a MiB or more, or cost
 * little (held the GIL under a tenth of the pause limit; any with no limit). A full collection
 * walks every live object: in a PyTorch client 50-130 ms a round for some twenty objects. */
bool roundtrim_policy_gc_paid(const struct roundtrim_policy_settings *set, uint64_t collected,
                              uint64_t freed_bytes, uint64_t took_us);

/* The same for a trim done in holds: its rate was learnt hold by hold (its whole time includes
 * the gaps between them). */
void roundtrim_policy_learn_trim_in_holds(struct roundtrim_policy_state *st, bool gave_back,
                                          uint64_t took_us, uint64_t measure_before);

/* A trim in holds: how long the next hold of an arena's lock may last, after one that lasted
 * took_us against a budget of budget_us (0: the first hold). A hold slower than its budget makes
 * the next shorter (half); one a thread of the program waited for keeps it at half the limit,
 * where the program's threads get the lock between holds; a hold nobody waited for lets the next
 * grow to three quarters of the limit (a hold may run a little past its budget), so an idle
 * program is trimmed in full with the fewest holds. */
uint64_t roundtrim_policy_next_hold_us(const struct roundtrim_policy_settings *set,
                                       uint64_t budget_us, uint64_t took_us, bool waited);

/* One hold of a trim in holds took took_us and gave back released bytes: the trim's rate
 * learns from it, as from a whole trim. */
void roundtrim_policy_learn_hold(struct roundtrim_policy_state *st, uint64_t took_us,
                                 uint64_t released);

/* A round of wall time round_us went by: the budget earns its share of it, up to ten rounds'
 * worth. */
void roundtrim_policy_round_time(struct roundtrim_policy_state *st,
                                 const struct roundtrim_policy_settings *set, uint64_t round_us);

/* The CPU one cleanup spent (all its actions and the reads they needed), charged to the
 * budget. */
void roundtrim_policy_charge(struct roundtrim_policy_state *st, uint64_t cpu_us);

#endif
