#include "policy/skip_reason.h"

#include <string.h>

static const struct {
    const char *name;
    bool expected;
} rows[RT_SKIP_COUNT] = {
#define RT_SKIP_REASON(name, expected, meaning) [RT_SKIP_##name] = {#name, expected},
#include "policy/skip_reasons.def"
};

static const struct {
    const char *old;
    enum roundtrim_skip now;
} old_words[] = {
#define RT_SKIP_OLD_WORD(old, name) {#old, RT_SKIP_##name},
#include "policy/skip_reasons.def"
};

const char *roundtrim_skip_name(enum roundtrim_skip why)
{
    return why > RT_SKIP_NONE && why < RT_SKIP_COUNT ? rows[why].name : NULL;
}

bool roundtrim_skip_expected(enum roundtrim_skip why)
{
    return why > RT_SKIP_NONE && why < RT_SKIP_COUNT && rows[why].expected;
}

bool roundtrim_skip_held_back(enum roundtrim_skip why)
{
#define RT_SKIP_HELD_BACK(name)                                                                    \
    if (why == RT_SKIP_##name)                                                                     \
        return true;
#include "policy/skip_reasons.def"
    return false;
}

enum roundtrim_skip roundtrim_skip_from_name(const char *name)
{
    if (!name)
        return RT_SKIP_NONE;
    for (int i = RT_SKIP_NONE + 1; i < RT_SKIP_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0)
            return (enum roundtrim_skip)i;
    for (size_t i = 0; i < sizeof old_words / sizeof old_words[0]; i++)
        if (strcmp(old_words[i].old, name) == 0)
            return old_words[i].now;
    return RT_SKIP_NONE;
}
