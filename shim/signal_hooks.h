/* The round signal: our handler stays installed whatever the application does with that signal,
 * and the application's own handler (installed before or after us) still runs. */
#ifndef ROUNDTRIM_SHIM_SIGNAL_HOOKS_H
#define ROUNDTRIM_SHIM_SIGNAL_HOOKS_H

/* Looks up libc's sigaction and signal functions (idempotent; normal context only). */
void roundtrim_signal_hooks_resolve(void);

/* Installs the handler for sig, keeping what was there as the application's handler. */
void roundtrim_signal_source_install(int sig);

/* Once the program itself set the round signal to SIG_DFL ("program_set_default", rounds by
 * signal are then off for good) or SIG_IGN ("program_set_ignore", off until it installs a
 * handler): that reason, returned once, for the next record to say; NULL otherwise. */
const char *roundtrim_signal_rounds_off_take(void);

/* The stderr line that goes with a record saying so (normal context). */
void roundtrim_signal_rounds_off_warn(const char *why);

#endif
