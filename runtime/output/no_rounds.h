/* A process with a round log that has ended no round in its first minutes: nothing marks its
 * rounds (no signal sent, no call, no hook attached, no timer), so nothing is measured or
 * cleaned, and it would otherwise write nothing at all. Its start record then says so and how
 * rounds are marked ("no_rounds"): written by the worker when the time comes (a Python process
 * has one from its start), or at exit. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_NO_ROUNDS_H
#define ROUNDTRIM_RUNTIME_OUTPUT_NO_ROUNDS_H

#include <stdint.h>

/* Seconds of the process's life (since its start, or its fork) without a round before the note. */
#ifndef ROUNDTRIM_NO_ROUNDS_AFTER_S
#define ROUNDTRIM_NO_ROUNDS_AFTER_S 120
#endif

/* The note for the start record, or NULL: a round was seen, or the time has not come. */
const char *roundtrim_no_rounds_note(void);

/* Milliseconds until the note is due, at least 1; 0 when none is to come (no log, a round seen,
 * the log already started). */
uint64_t roundtrim_no_rounds_wait_ms(void);

/* Starts the log, its start record carrying the note, when the note is due. */
void roundtrim_no_rounds_write_when_due(void);

#endif
