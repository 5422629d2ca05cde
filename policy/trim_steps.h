/* Trim steps: whether the worker trims glibc's heap between two round ends.
 *
 * glibc holds an arena's lock for the whole of its part of a trim, so a round end that meets a
 * large freed heap at once would hold the program's threads past the pause limit
 * (ROUNDTRIM_TRIM_PAUSE_MS). The worker's samples watch the heap freed since the last trim, from
 * the allocation counters (no walk, no lock), and a step trims as soon as a trim of it would
 * hold an arena for half the limit: many short holds instead of one long one, where the program
 * frees as it goes. The step's size follows the machine: the trim's rate, learnt from this
 * process's own trims, predicts the pause. A burst of frees between two samples predicted over
 * the limit is trimmed in holds each under it where the arenas can be walked; else it is the
 * round end's to judge (and to say so).
 *
 * Steps run only where the adaptive policy trims on its own judgement: not before a first trim
 * taught the rate, not while the budget is overdrawn or the trim is backed off, not after the
 * program trimmed itself. A step's reading teaches the rate like any trim, as a running mean,
 * so one slow reading makes the next steps smaller and sooner, never stops them.
 *
 * Pure: the caller reads the counters and the clock and trims; this file decides and learns. */
#ifndef ROUNDTRIM_POLICY_TRIM_STEPS_H
#define ROUNDTRIM_POLICY_TRIM_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/cleanup_policy.h"

/* What the worker measured at one sample. */
struct roundtrim_step_inputs {
    bool cleaning;        /* round ends clean at all (ROUNDTRIM_GC_ROUNDS is not 0) */
    bool glibc_counted;   /* glibc's heap, its traffic counted: what a step reads and trims */
    bool program_trimmed; /* the program called malloc_trim itself since the last cleanup */
    bool holds_possible;  /* a trim can be done in holds of the arenas' locks */
    int64_t net_freed;    /* heap bytes freed minus handed out since the start (mapped blocks
                             left out); negative while the heap grows */
    uint32_t largest_arena_permille; /* its largest arena's share of the heap (0: unknown) */
};

/* Where the freed heap was counted from: the last trim, or the first look. */
struct roundtrim_step_base {
    bool known;
    int64_t net_freed;
};

enum roundtrim_step_kind {
    RT_STEP_NONE,     /* wait: not worth a step yet, or not the steps' to do */
    RT_STEP_WHOLE,    /* one malloc_trim */
    RT_STEP_IN_HOLDS, /* in holds, each under the pause limit */
};

struct roundtrim_step_plan {
    enum roundtrim_step_kind kind;
    uint64_t freed_bytes;        /* heap freed since the base */
    uint64_t predicted_pause_us; /* the longest hold of an arena a whole trim of it would take */
};

/* Decides one sample. A first look, or a heap grown back over what was freed, moves the base to
 * now (nothing new is free). */
void roundtrim_trim_step_decide(const struct roundtrim_policy_state *st,
                                const struct roundtrim_policy_settings *set,
                                struct roundtrim_step_base *base,
                                const struct roundtrim_step_inputs *in,
                                struct roundtrim_step_plan *plan);

/* A step ran: it gave back released bytes in took_us of wall time and cpu_us of CPU (charged to
 * the budget); the heap's net freed bytes are net_freed_after, the base of the next. A whole
 * step that gave back a MiB teaches the trim's rate (one in holds learnt it hold by hold); a
 * step that found little is no verdict on the trim. */
void roundtrim_trim_step_done(struct roundtrim_policy_state *st, struct roundtrim_step_base *base,
                              const struct roundtrim_step_plan *plan, uint64_t released,
                              uint64_t took_us, uint64_t cpu_us, int64_t net_freed_after);

/* A trim at a round's end: the steps count what is freed from net_freed on. */
void roundtrim_trim_step_rebase(struct roundtrim_step_base *base, int64_t net_freed);

#endif
