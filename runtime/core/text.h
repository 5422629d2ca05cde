/* Comparisons of roundtrim's own where a libc call would cost every process a lazy binding at
 * start (some 700 instructions for each libc function first called there). */
#ifndef ROUNDTRIM_RUNTIME_CORE_TEXT_H
#define ROUNDTRIM_RUNTIME_CORE_TEXT_H

#include <stdbool.h>

/* Whether s begins with prefix. */
static inline bool roundtrim_starts_with(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return false;
    return true;
}

/* Whether a and b are the same string. */
static inline bool roundtrim_same_string(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* Whether part occurs anywhere in s. */
static inline bool roundtrim_contains(const char *s, const char *part)
{
    for (; *s; s++)
        if (roundtrim_starts_with(s, part))
            return true;
    return false;
}

#endif
