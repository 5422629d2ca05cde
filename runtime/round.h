/* The work of a round boundary, on the worker thread: measure, clean up when due, record. */
#ifndef ROUNDTRIM_RUNTIME_ROUND_H
#define ROUNDTRIM_RUNTIME_ROUND_H

#include <stdbool.h>

#include "runtime/boundary.h"

/* Notes a boundary; async-signal-safe. */
void roundtrim_round_add_pending(enum roundtrim_source src);

/* Runs one round per pending boundary (worker only). */
void roundtrim_round_run_pending(void);

/* Whether the worker should wake periodically (timer rounds, memory-pressure sampling). */
bool roundtrim_round_wants_samples(void);

/* One periodic sample: timer rounds and memory pressure (worker only). */
void roundtrim_round_sample(void);

/* Writes the exit summary if this process wrote a log. */
void roundtrim_round_at_exit(void);

void roundtrim_round_fork_child(void);

#endif
