/* Rounds by signal, as the program's own signal calls leave them (the hooks in shim/ note it,
 * the records say it). */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_SIGNAL_ROUNDS_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_SIGNAL_ROUNDS_H

/* The program itself set the round signal to SIG_DFL ("program_set_default": rounds by signal
 * are then off for good) or SIG_IGN ("program_set_ignore": off until it installs a handler).
 * why is a string literal. Async-signal-safe. */
void roundtrim_signal_rounds_off_note(const char *why);

/* That reason, returned once, for the next record to say; NULL otherwise. */
const char *roundtrim_signal_rounds_off_take(void);

/* The stderr line that goes with a record saying so (normal context). */
void roundtrim_signal_rounds_off_warn(const char *why);

#endif
