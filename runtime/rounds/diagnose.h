/* The process's own diagnosis: its last rounds' breakdowns kept in a window, a "diagnosis"
 * record every ROUNDTRIM_DIAG_ROUNDS rounds and at exit, and the latest one for the metrics.
 * Callers hold the round lock. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_DIAGNOSE_H
#define ROUNDTRIM_RUNTIME_ROUNDS_DIAGNOSE_H

#include <stdbool.h>

#include "policy/diagnosis.h"

struct roundtrim_round_record;

/* Adds a round to the window (rounds whose memory was not measured are left out) and, when
 * one is due, writes the diagnosis record. */
void roundtrim_diagnose_round(const struct roundtrim_round_record *r);

/* The exit: a diagnosis of the rounds recorded since the last one, when there are any, however
 * few of them were measured. */
void roundtrim_diagnose_exit(void);

/* The latest diagnosis, or NULL before the first. */
const struct roundtrim_diagnosis *roundtrim_diagnose_latest(void);

void roundtrim_diagnose_fork_child(void);

#endif
