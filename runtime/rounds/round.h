/* The work of a round boundary, on the worker thread: measure, clean up when due, record. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_ROUND_H
#define ROUNDTRIM_RUNTIME_ROUNDS_ROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/boundary/boundary.h"

/* Records every queued boundary, one round each (worker only). */
void roundtrim_round_run_pending(void);

/* How often the worker should wake for roundtrim_round_sample (timer rounds, memory pressure,
 * peak RSS samples); 0 when it need not. */
uint64_t roundtrim_round_sample_period_ms(void);

/* One periodic sample: peak RSS, timer rounds and memory pressure (worker only). */
void roundtrim_round_sample(void);

/* The exit path (exit, or _exit): records pending rounds within ROUNDTRIM_EXIT_BUDGET_MS, then
 * the exit summary if this process wrote a log. Runs once per process. */
void roundtrim_round_at_exit(void);

/* The same for _exit and _Exit, which may be called from a signal handler: rounds the exiting
 * thread records itself skip what takes the allocator's or the driver's locks (heap_live,
 * the driver's free memory). */
void roundtrim_round_at_fast_exit(void);

/* Before exec replaces the program: records pending rounds within ROUNDTRIM_EXIT_BUDGET_MS
 * (cleanups skipped), then an "exec" record with the totals if this process wrote a log. Returns
 * with everything as before, for an exec that fails. */
void roundtrim_round_at_exec(void);

/* Whether this process has anything to record at exit: a record already written, or a boundary of
 * its own (a fork child that saw none has not). */
bool roundtrim_round_exit_wanted(void);

void roundtrim_round_fork_child(void);

/* Starts the clock of the first round (its round_us, and the cleanup budget it earns). */
void roundtrim_round_clock_start(void);

#endif
