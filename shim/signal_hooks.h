/* The round signal: our handler stays installed whatever the application does with that signal,
 * and the application's own handler (installed before or after us) still runs. */
#ifndef ROUNDTRIM_SHIM_SIGNAL_HOOKS_H
#define ROUNDTRIM_SHIM_SIGNAL_HOOKS_H

/* Looks up libc's sigaction and signal functions (idempotent; normal context only). */
void roundtrim_signal_hooks_resolve(void);

/* Installs the handler for sig, keeping what was there as the application's handler. */
void roundtrim_signal_source_install(int sig);

#endif
