/* A glibc trim in holds: every arena walked in holds of its lock that each fit the pause limit,
 * the program's threads free to take the lock between them, the free pages given back in
 * batches (see runtime/alloc/glibc_arenas.h). */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_TRIM_HOLDS_H
#define ROUNDTRIM_RUNTIME_ROUNDS_TRIM_HOLDS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/cleanup_policy.h"

struct roundtrim_holds_done {
    uint64_t holds, hold_max_us, waited; /* holds a thread of the program waited for */
    uint64_t us;                         /* the whole trim's wall time, gaps included */
    uint64_t calls, call_bytes;          /* release system calls, and the bytes they covered */
    uint64_t arenas_left;                /* arenas left alone: unlike the layout under lock */
    bool cut;                            /* stopped at its budget with memory left to walk */
};

/* Whether a trim in holds can be tried here: glibc's layout known, and the arenas not found
 * unreadable in a row lately (after a few such walks, none is tried for a while that doubles,
 * then again). */
bool roundtrim_trim_holds_possible(void);

/* Trims the heap in holds; each teaches the policy's rate. Stops early once stop() says so
 * (the process is ending), or once the holds took budget_us (0: no cap; out->cut says so).
 * Returns RT_SKIP_NONE, or why the arenas could not be walked (nothing was done). */
enum roundtrim_skip roundtrim_trim_in_holds(struct roundtrim_policy_state *st,
                                            const struct roundtrim_policy_settings *set,
                                            uint64_t budget_us, bool (*stop)(void),
                                            struct roundtrim_holds_done *out);

/* The cost of one release call on this host (a running mean, microseconds; 0 before any). */
uint64_t roundtrim_trim_call_us(void);

#endif
