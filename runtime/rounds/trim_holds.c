#include "runtime/rounds/trim_holds.h"

#include <string.h>

#include "policy/release_cost.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/glibc_arenas.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"

/* A walk that has not finished after this many holds stops: the next trim goes on. */
#define HOLDS_MAX 100000
/* After a hold a thread waited for: the time it gets to take the lock before the next. */
#define GAP_AFTER_WAIT_US 1000
#define BEFORE_HOLD_US    50
/* Reads of the heaps' ranges an arena may ask for in one trim, when a hold met a chunk outside. */
#define REREADS_MAX 2

/* Walks that found the arenas unreadable in a row: after a few, none is tried for a while (a
 * single one may have read a list while the program changed it), a minute at first, twice as
 * long after each further failure, an hour at most; then they are tried again. */
#define FAILURES_TO_PAUSE 3
#define PAUSE_FIRST_US    (60ull * 1000000)
#define PAUSE_LAST_US     (3600ull * 1000000)
static unsigned walk_failures;
static uint64_t walks_paused_until_us, walks_pause_us;
/* glibc's layout is not the one known here: final. */
static bool layout_unknown;

/* Worker only, round lock held: one walk at a time. */
static struct roundtrim_arena_walk walk;
/* What a release call costs here: learnt by every hold, kept for the process. */
static struct roundtrim_release_cost release_cost;

bool roundtrim_trim_holds_possible(void)
{
    return !layout_unknown && roundtrim_arenas_layout_known() &&
           roundtrim_now_us() >= walks_paused_until_us &&
           roundtrim_allocator_kind() == RT_ALLOC_GLIBC &&
           roundtrim_allocator_counts_skipped() == RT_SKIP_NONE;
}

uint64_t roundtrim_trim_call_us(void)
{
    return release_cost.call_us_mean;
}

static void walk_failed(enum roundtrim_skip why)
{
    if (why == RT_SKIP_arena_layout_unknown) {
        layout_unknown = true;
        return;
    }
    if (++walk_failures < FAILURES_TO_PAUSE)
        return;
    walk_failures = 0;
    walks_pause_us = walks_pause_us ? walks_pause_us * 2 : PAUSE_FIRST_US;
    if (walks_pause_us > PAUSE_LAST_US)
        walks_pause_us = PAUSE_LAST_US;
    walks_paused_until_us = roundtrim_now_us() + walks_pause_us;
}

enum roundtrim_skip roundtrim_trim_in_holds(struct roundtrim_policy_state *st,
                                            const struct roundtrim_policy_settings *set,
                                            uint64_t budget_us, bool (*stop)(void),
                                            struct roundtrim_holds_done *out)
{
    memset(out, 0, sizeof *out);
    if (!roundtrim_trim_holds_possible())
        return RT_SKIP_arena_walk_paused;
    enum roundtrim_skip why = roundtrim_arenas_find(roundtrim_allocator_glibc_code(), &walk);
    if (why) {
        walk_failed(why);
        return why;
    }
    walk_failures = 0;
    walks_pause_us = 0;
    uint64_t t0 = roundtrim_now_us();
    uint64_t budget = roundtrim_policy_next_hold_us(set, 0, 0, false), held_us = 0;
    for (unsigned i = 0; i < walk.count && !out->cut; i++) {
        unsigned rereads = 0;
        while (!walk.done[i] && out->holds < HOLDS_MAX && !stop()) {
            if (budget_us && held_us >= budget_us) {
                out->cut = true; /* the rest waits for the next cleanup */
                break;
            }
            if (budget_us && budget > budget_us - held_us)
                budget = budget_us - held_us;
            struct roundtrim_arena_hold h;
            uint64_t rss = roundtrim_rss_bytes();
            /* A thread that just woke is less likely to lose its CPU while it holds the lock
             * (measured: the longest holds of a loaded machine about halved). */
            roundtrim_sleep_us(BEFORE_HOLD_US);
            bool ok = roundtrim_arenas_hold(&walk, i, budget, &release_cost, &h);
            uint64_t now = roundtrim_rss_bytes();
            out->holds++;
            held_us += h.us;
            out->calls += h.calls;
            out->call_bytes += h.advised;
            if (h.us > out->hold_max_us)
                out->hold_max_us = h.us;
            if (h.waited)
                out->waited++;
            if (!ok && rereads++ < REREADS_MAX && roundtrim_arenas_reread_heaps(&walk)) {
                /* The program grew or shrank a heap since the ranges were read (a pointer
                 * outside them is not followed): read again, and the arena goes on. */
                walk.done[i] = false;
                continue;
            }
            if (!ok) {
                out->arenas_left++;
                break; /* this arena no longer looks as expected: left alone */
            }
            roundtrim_policy_learn_hold(st, h.us, rss > now ? rss - now : 0);
            budget = roundtrim_policy_next_hold_us(set, budget, h.us, h.waited);
            if (h.waited)
                roundtrim_sleep_us(GAP_AFTER_WAIT_US);
        }
    }
    out->us = roundtrim_now_us() - t0;
    return RT_SKIP_NONE;
}
