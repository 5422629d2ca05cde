#include "policy/option_names.h"

#include <stdio.h>
#include <string.h>

#include "policy/options.h"

#define PREFIX     "ROUNDTRIM_"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* Read by the roundtrim command, its report and the examples, never by the library: a process
 * that inherits them is not misconfigured. */
static const char *const command_names[] = {
    "ROUNDTRIM_LIB",     "ROUNDTRIM_PYTHON", "ROUNDTRIM_PLOTTER", "ROUNDTRIM_JEMALLOC_PATHS",
    "ROUNDTRIM_LOG_DIR",
};
#define COMMAND_NAMES (sizeof command_names / sizeof command_names[0])
#define KNOWN_NAMES   (RT_OPT_COUNT + COMMAND_NAMES)

static const char *known_name(size_t i)
{
    return i < RT_OPT_COUNT ? roundtrim_options[i].name : command_names[i - RT_OPT_COUNT];
}

bool roundtrim_variable_known(const char *name, size_t len)
{
    for (size_t i = 0; i < KNOWN_NAMES; i++) {
        const char *k = known_name(i);
        if (strlen(k) == len && memcmp(k, name, len) == 0)
            return true;
    }
    return false;
}

/* Levenshtein distance of a[0..an) and b[0..bn), both at most ROUNDTRIM_NAME_SHOWN bytes. */
static size_t edit_distance(const char *a, size_t an, const char *b, size_t bn)
{
    size_t row[ROUNDTRIM_NAME_SHOWN + 1];
    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

static size_t after_prefix(const char **s, size_t len)
{
    if (len >= PREFIX_LEN && memcmp(*s, PREFIX, PREFIX_LEN) == 0) {
        *s += PREFIX_LEN;
        len -= PREFIX_LEN;
    }
    return len > ROUNDTRIM_NAME_SHOWN ? ROUNDTRIM_NAME_SHOWN : len;
}

const char *roundtrim_variable_closest(const char *name, size_t len)
{
    len = after_prefix(&name, len);
    const char *best = known_name(0);
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < KNOWN_NAMES; i++) {
        const char *k = known_name(i);
        size_t kn = after_prefix(&k, strlen(k));
        size_t d = edit_distance(name, len, k, kn);
        if (d < best_d) {
            best_d = d;
            best = known_name(i);
        }
    }
    return best;
}

bool roundtrim_unknown_variable_warning(const char *entry, char *buf, size_t cap)
{
    if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
        return false;
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
    if (roundtrim_variable_known(entry, len))
        return false;
    bool cut = len > ROUNDTRIM_NAME_SHOWN;
    snprintf(buf, cap,
             "%.*s%s is not a roundtrim variable and changes nothing; did you mean %s? "
             "(roundtrim env lists them)",
             (int)(cut ? ROUNDTRIM_NAME_SHOWN : len), entry, cut ? "..." : "",
             roundtrim_variable_closest(entry, len));
    return true;
}
