#include "runtime/rounds/trim_holds.h"

#include <string.h>

#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/glibc_arenas.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"

/* A walk that has not finished after this many holds stops: the next trim goes on. */
#define HOLDS_MAX 100000
/* After a hold a thread waited for: the time it gets to take the lock before the next. */
#define GAP_AFTER_WAIT_US 1000
#define BEFORE_HOLD_US    50

/* Walks that found the arenas unlike the layout known here, in a row: after a few, none is
 * tried again (a single one may have read a list while the program changed it). */
#define FAILURES_TO_GIVE_UP 3
static unsigned walk_failures;

bool roundtrim_trim_holds_possible(void)
{
    return walk_failures < FAILURES_TO_GIVE_UP && roundtrim_allocator_kind() == RT_ALLOC_GLIBC &&
           roundtrim_allocator_counts_skipped() == NULL;
}

/* Worker only, round lock held: one walk at a time. */
static struct roundtrim_arena_walk walk;

bool roundtrim_trim_in_holds(struct roundtrim_policy_state *st,
                             const struct roundtrim_policy_settings *set, bool (*stop)(void),
                             struct roundtrim_holds_done *out)
{
    memset(out, 0, sizeof *out);
    if (!roundtrim_trim_holds_possible() ||
        !roundtrim_arenas_find(roundtrim_allocator_glibc_code(), &walk)) {
        walk_failures++;
        return false;
    }
    walk_failures = 0;
    uint64_t t0 = roundtrim_now_us();
    uint64_t budget = roundtrim_policy_next_hold_us(set, 0, 0, false);
    for (unsigned i = 0; i < walk.count; i++) {
        while (!walk.done[i] && out->holds < HOLDS_MAX && !stop()) {
            struct roundtrim_arena_hold h;
            uint64_t rss = roundtrim_rss_bytes();
            /* A thread that just woke is less likely to lose its CPU while it holds the lock
             * (measured: the longest holds of a loaded machine about halved). */
            roundtrim_sleep_us(BEFORE_HOLD_US);
            bool ok = roundtrim_arenas_hold(&walk, i, budget, &h);
            uint64_t now = roundtrim_rss_bytes();
            out->holds++;
            if (h.us > out->hold_max_us)
                out->hold_max_us = h.us;
            if (h.waited)
                out->waited++;
            if (!ok)
                break; /* this arena no longer looks as expected: left alone */
            roundtrim_policy_learn_hold(st, h.us, rss > now ? rss - now : 0);
            budget = roundtrim_policy_next_hold_us(set, budget, h.us, h.waited);
            if (h.waited)
                roundtrim_sleep_us(GAP_AFTER_WAIT_US);
        }
    }
    out->us = roundtrim_now_us() - t0;
    return true;
}
