/* Whether the program ran a full garbage collection itself since roundtrim's last cleanup: a
 * gc.collect() of its own (APPFL's, NVFlare 2.7/2.8's), or an automatic full collection, which did
 * the same work. Read from the interpreter's own statistics (gc.get_stats(), generation 2), never
 * through gc.callbacks or anything else the program can see. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_PROGRAM_GC_H
#define ROUNDTRIM_RUNTIME_PYTHON_PROGRAM_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* True when a full collection ran since the last call of roundtrim_python_gc_mark(). Takes the
 * GIL on roundtrim's helper thread (worker only). False when it cannot tell: the program never
 * imported gc (then it never called gc.collect() either), or the interpreter could not be reached,
 * and then *unreachable says why (gil_timeout, busy, exiting, ...): the gc step would meet the
 * same obstacle, and skips for that reason instead of waiting again. */
bool roundtrim_python_program_collected(enum roundtrim_skip *unreachable);

/* Takes the starting point, once, with the GIL held (when the first round hook attaches, else at
 * the first reading): full collections while the program was still importing its modules are not
 * news to round 1. */
void roundtrim_python_gc_baseline(void);

/* Whether the interpreter's own collections (any generation, the program's gc.collect() calls
 * included) ran between the last mark and the last reading of roundtrim_python_program_collected;
 * if so, *collected is the objects they found: cycles the program makes. False when none ran
 * (automatic collection off) or the reading failed: no evidence either way. */
bool roundtrim_python_gc_evidence(uint64_t *collected);

/* After the cleanup's gc step: what ran is no longer news. ran: our own collection ran, finding
 * collected objects; skipped: why it did not (job_timeout: it runs on, and counts as ours when
 * it ends). */
void roundtrim_python_gc_mark(bool ran, enum roundtrim_skip skipped, uint64_t collected);

#endif
