#include "policy/trim_steps.h"

#include <string.h>

/* A step that gave back less teaches the rate nothing: the walk of chunks given back before. */
#define STEP_TEACHES_BYTES (1u << 20)

/* Whether steps are the adaptive policy's to take now. */
static bool steps_allowed(const struct roundtrim_policy_state *st,
                          const struct roundtrim_policy_settings *set,
                          const struct roundtrim_step_inputs *in)
{
    if (!set->adaptive || !in->cleaning || set->pause_us == 0 || !in->glibc_counted)
        return false;
    if (st->trim_rate == 0)
        return false; /* no trim measured yet: the round end's first trim teaches the rate */
    if (set->budget_percent > 0 && st->credit_us < 0)
        return false; /* the budget is overdrawn: the rounds earn it back first */
    if (st->act[RT_CLEAN_TRIM].probe_gap > 0)
        return false; /* the trim gave nothing back lately: the round end tries it again */
    return !in->program_trimmed;
}

void roundtrim_trim_step_decide(const struct roundtrim_policy_state *st,
                                const struct roundtrim_policy_settings *set,
                                struct roundtrim_step_base *base,
                                const struct roundtrim_step_inputs *in,
                                struct roundtrim_step_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (!steps_allowed(st, set, in))
        return;
    if (!base->known || in->net_freed <= base->net_freed) {
        roundtrim_trim_step_rebase(base, in->net_freed);
        return;
    }
    plan->freed_bytes = (uint64_t)(in->net_freed - base->net_freed);
    /* The trim takes one arena's lock at a time: a thread waits for its arena's part. */
    uint64_t share = in->largest_arena_permille ? in->largest_arena_permille : 1000;
    plan->predicted_pause_us = st->trim_rate * (plan->freed_bytes >> 20) / 1000 * share;
    /* Under half the limit: wait for more. Over the limit (a burst of frees between two
     * samples): in holds where the arenas can be walked, else the round end's. */
    bool over = plan->predicted_pause_us > set->pause_us;
    if (plan->predicted_pause_us < set->pause_us / 2 || (over && !in->holds_possible))
        return;
    /* In holds wherever they can be: roundtrim's walk gives the pages back in batches, cheaper
     * than a whole malloc_trim's call a chunk. */
    plan->kind = in->holds_possible ? RT_STEP_IN_HOLDS : RT_STEP_WHOLE;
}

void roundtrim_trim_step_done(struct roundtrim_policy_state *st, struct roundtrim_step_base *base,
                              const struct roundtrim_step_plan *plan, uint64_t released,
                              uint64_t took_us, uint64_t cpu_us, int64_t net_freed_after)
{
    if (plan->kind == RT_STEP_WHOLE && released >= STEP_TEACHES_BYTES)
        roundtrim_policy_learn(st, RT_CLEAN_TRIM, true, took_us, plan->freed_bytes);
    roundtrim_policy_charge(st, cpu_us);
    roundtrim_trim_step_rebase(base, net_freed_after);
}

void roundtrim_trim_step_rebase(struct roundtrim_step_base *base, int64_t net_freed)
{
    base->known = true;
    base->net_freed = net_freed;
}
