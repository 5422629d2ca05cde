/* The library's settings and life cycle: constructor, fork handlers, exit. */
#ifndef ROUNDTRIM_RUNTIME_STATE_H
#define ROUNDTRIM_RUNTIME_STATE_H

#include <stdbool.h>

#include "policy/options.h"

/* The settings read at start (valid after the constructor). */
const struct roundtrim_config *roundtrim_config(void);

/* When roundtrim started in this process (seconds since the epoch). */
double roundtrim_start_time(void);

/* False before the constructor ran, and when ROUNDTRIM_DISABLE is set. */
bool roundtrim_active(void);

/* The library's start, run by the constructor in shim/init.c once the next allocator is known:
 * reads the settings (none in a secure-exec process) and registers the fork and exit handlers.
 * False when roundtrim stays pure forwarding (secure-exec, ROUNDTRIM_DISABLE). */
bool roundtrim_state_start(void);

/* Then, after the round signal's handler is in: the Python hooks and an early worker. */
void roundtrim_state_start_sources(void);

/* One line on stderr, "roundtrim: <text>\n", written with a single write(2). */
void roundtrim_warn(const char *text);

/* The same, with ": <strerror(err)>" appended; printed once per distinct text pointer. */
void roundtrim_warn_once_errno(const char *text, int err);

#endif
