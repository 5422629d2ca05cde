/* A fake environment for the option parser: NULL-terminated name/value pairs. */
#ifndef ROUNDTRIM_TEST_ENV_FIXTURE_H
#define ROUNDTRIM_TEST_ENV_FIXTURE_H

#include <string.h>

static const char *fake_env(void *ctx, const char *name)
{
    const char *const *kv = ctx;
    for (; kv && kv[0]; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

#endif
