/* Names under ROUNDTRIM_ in the environment that name nothing: a misspelled variable
 * (ROUNDTRIM_GC_ROUND=5) would otherwise change nothing without a word. Known are the option
 * table's names (policy/options.h) and those of the roundtrim command and its tools, which the
 * library leaves to them (ROUNDTRIM_LIB, ROUNDTRIM_PYTHON, ...).
 *
 * Pure: no process state, no allocation. */
#ifndef ROUNDTRIM_POLICY_OPTION_NAMES_H
#define ROUNDTRIM_POLICY_OPTION_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/options.h"

/* Whether the first len bytes of name are a variable roundtrim knows. */
bool roundtrim_variable_known(const char *name, size_t len);

/* The known variable meant by the first len bytes of name: the one that says the same in our
 * words (ROUNDTRIM_LOG_FILE and ROUNDTRIM_LOGFILE: ROUNDTRIM_LOG; units and "FILE" or "PATH"
 * left out), else the nearest in spelling (the fewest letters added, removed or changed after
 * the ROUNDTRIM_ prefix; the option table's first on a tie). */
const char *roundtrim_variable_closest(const char *name, size_t len);

/* For an environment entry "ROUNDTRIM_NAME=value" whose name is not known: its warning line
 * into buf (no "roundtrim: " prefix, always terminated when cap > 0) and true; false, buf left
 * alone, for any other entry:
 *   ROUNDTRIM_GC_ROUND is not a roundtrim variable and changes nothing; did you mean
 *   ROUNDTRIM_GC_ROUNDS? (roundtrim env lists them)
 * Where the variable meant is unset by default and lookup (may be NULL) finds it unset, the
 * line says what that does: "did you mean ROUNDTRIM_LOG (unset: no log is written)?".
 * A name longer than ROUNDTRIM_NAME_SHOWN bytes is shown by its start. */
#define ROUNDTRIM_NAME_SHOWN 64
bool roundtrim_unknown_variable_warning(const char *entry, roundtrim_env_lookup lookup, void *ctx,
                                        char *buf, size_t cap);

#endif
