/* Why a step of a round was not done, as a type: one value per row of policy/skip_reasons.def.
 * Code says a reason only by its value (RT_SKIP_exiting), so a reason without a row does not
 * compile; the records carry the row's name. */
#ifndef ROUNDTRIM_POLICY_SKIP_REASON_H
#define ROUNDTRIM_POLICY_SKIP_REASON_H

#include <stdbool.h>

enum roundtrim_skip {
    RT_SKIP_NONE = 0, /* the step ran, or was not due: nothing to say */
#define RT_SKIP_REASON(name, expected, meaning) RT_SKIP_##name,
#include "policy/skip_reasons.def"
    RT_SKIP_COUNT,
    /* A step that found nothing to do: no action, and no reason in the record (it is not news).
     * Never written. */
    RT_SKIP_NOTHING_TO_DO = RT_SKIP_COUNT
};

/* The reason's stable name ("exiting"), or NULL for RT_SKIP_NONE and RT_SKIP_NOTHING_TO_DO:
 * what the record says. */
const char *roundtrim_skip_name(enum roundtrim_skip why);

/* Whether the reason is no failure (the row's expected column). */
bool roundtrim_skip_expected(enum roundtrim_skip why);

/* Whether the reason held a due cleanup back for its cost (an RT_SKIP_HELD_BACK row). */
bool roundtrim_skip_held_back(enum roundtrim_skip why);

/* The reason a record names: a row's name, or a word older versions wrote for it
 * (RT_SKIP_OLD_WORD). RT_SKIP_NONE for NULL and for a word this table does not have. */
enum roundtrim_skip roundtrim_skip_from_name(const char *name);

/* How a step says it did not run: it returns why, and RT_SKIP_NONE when it ran; one that found
 * nothing to do returns RT_SKIP_NOTHING_TO_DO. This is what the record says of it. */
static inline enum roundtrim_skip roundtrim_skip_news(enum roundtrim_skip why)
{
    return why == RT_SKIP_NOTHING_TO_DO ? RT_SKIP_NONE : why;
}

#endif
