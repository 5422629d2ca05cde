/* The settings read at start, whether roundtrim is active, and its one way of saying something:
 * a warning line on stderr. Every folder of the runtime may use this. */
#ifndef ROUNDTRIM_RUNTIME_CORE_SETTINGS_H
#define ROUNDTRIM_RUNTIME_CORE_SETTINGS_H

#include <stdbool.h>

#include "policy/options.h"

/* The settings read at start (valid after the constructor). */
const struct roundtrim_config *roundtrim_config(void);

/* When roundtrim started in this process (seconds since the epoch). */
double roundtrim_start_time(void);

/* False before the constructor ran, and when ROUNDTRIM_DISABLE is set. */
bool roundtrim_active(void);

/* Reads the settings from the environment, copies the strings they point at and prints their
 * warnings. False when roundtrim must stay pure forwarding: a secure-exec process (nothing of
 * its environment is read) or ROUNDTRIM_DISABLE. */
bool roundtrim_settings_load(void);

/* From here on roundtrim_active() is true. */
void roundtrim_settings_activate(void);

/* A fork child is a process of its own: its start time is the fork's. */
void roundtrim_settings_fork_child(void);

/* One line on stderr, "roundtrim: <text>\n", written with a single write(2). */
void roundtrim_warn(const char *text);

/* A warning about a setting: said once per process tree (not where the parent, started with the
 * same settings and writing to the same stderr, said it). */
void roundtrim_warn_setting(const char *text);

/* The same, with ": <strerror(err)>" appended; printed once per distinct text pointer. */
void roundtrim_warn_once_errno(const char *text, int err);

#endif
