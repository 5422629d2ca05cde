/* A glibc trim in holds: every arena walked in holds of its lock that each fit the pause limit,
 * the program's threads free to take the lock between them (see runtime/alloc/glibc_arenas.h). */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_TRIM_HOLDS_H
#define ROUNDTRIM_RUNTIME_ROUNDS_TRIM_HOLDS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/cleanup_policy.h"

struct roundtrim_holds_done {
    uint64_t holds, hold_max_us, waited; /* holds a thread of the program waited for */
    uint64_t us;                         /* the whole trim's wall time, gaps included */
};

/* Whether a trim in holds can be tried here (glibc's layout known, not found wrong before). */
bool roundtrim_trim_holds_possible(void);

/* Trims the heap in holds; each teaches the policy's rate. Stops early once stop() says so
 * (the process is ending). False when the arenas could not be found as expected: nothing was
 * done (after a few such in a row, no trim in holds is tried again in this process). */
bool roundtrim_trim_in_holds(struct roundtrim_policy_state *st,
                             const struct roundtrim_policy_settings *set, bool (*stop)(void),
                             struct roundtrim_holds_done *out);

#endif
