/* The library's life in a process: start, fork, exit. Everything the runtime starts or resets is
 * started or reset here, in one order, written once. */
#ifndef ROUNDTRIM_RUNTIME_LIFECYCLE_H
#define ROUNDTRIM_RUNTIME_LIFECYCLE_H

#include <stdbool.h>

/* Run by the constructor in shim/init.c once the next allocator is known: reads the settings
 * (none in a secure-exec process), starts the runtime's parts and registers the fork and exit
 * handlers. False when roundtrim stays pure forwarding (secure-exec, ROUNDTRIM_DISABLE). */
bool roundtrim_lifecycle_start(void);

/* Then, after the round signal's handler is in: the Python hooks and an early worker. */
void roundtrim_lifecycle_start_sources(void);

#endif
