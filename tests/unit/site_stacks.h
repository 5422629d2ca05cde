/* Made-up stacks for the site table. Stack n has 1 + n % 24 native frames (n * 1000 + k + 1)
 * and n % 9 Python frames (code (n + 1) * 0x1000 + k * 16, line n + k); a site's frames say
 * which stack it holds, and whether they are all of that one. */
#ifndef ROUNDTRIM_TEST_SITE_STACKS_H
#define ROUNDTRIM_TEST_SITE_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/sites/site_table.h"

struct stack {
    uintptr_t frames[ROUNDTRIM_SITE_NATIVE_MAX];
    struct roundtrim_site_py py[ROUNDTRIM_SITE_PYTHON_MAX];
    int depth, py_depth;
};

static inline void stack_make(struct stack *s, uint64_t n)
{
    s->depth = 1 + (int)(n % ROUNDTRIM_SITE_NATIVE_MAX);
    s->py_depth = (int)(n % (ROUNDTRIM_SITE_PYTHON_MAX + 1));
    for (int k = 0; k < s->depth; k++)
        s->frames[k] = (uintptr_t)(n * 1000 + (uint64_t)k + 1);
    for (int k = 0; k < s->py_depth; k++)
        s->py[k] = (struct roundtrim_site_py){(const void *)(uintptr_t)((n + 1) * 0x1000 + k * 16),
                                              (int32_t)(n + (uint64_t)k), (uint32_t)(n * 7)};
}

static inline int32_t stack_intern(const struct stack *s)
{
    return roundtrim_site_intern(s->frames, s->depth, s->py, s->py_depth);
}

/* Whether the site holds exactly stack n. */
static inline bool site_is_stack(const struct roundtrim_site *site, uint64_t n)
{
    struct stack s;
    stack_make(&s, n);
    if (site->depth != s.depth || site->py_depth != s.py_depth)
        return false;
    for (int k = 0; k < s.depth; k++)
        if (site->frames[k] != s.frames[k])
            return false;
    for (int k = 0; k < s.py_depth; k++)
        if (site->py[k].code != s.py[k].code || site->py[k].line != s.py[k].line ||
            site->py[k].names_key != s.py[k].names_key)
            return false;
    return true;
}

/* The stack a site's first frame names. */
static inline uint64_t site_stack(const struct roundtrim_site *site)
{
    return (site->frames[0] - 1) / 1000;
}

#endif
