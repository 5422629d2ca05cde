#include "runtime/alloc/fast_modes.h"

#ifdef ROUNDTRIM_DEBUG
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void roundtrim_fast_rule_broken(const char *rule, const char *file, int line)
{
    char num[16], *p = num + sizeof num;
    unsigned n = line > 0 ? (unsigned)line : 0;
    do
        *--p = (char)('0' + n % 10);
    while ((n /= 10) && p > num);
    const char *parts[] = {"roundtrim (debug build): fast-path rule broken: ", rule, " at ", file,
                           ":"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0)
            break;
    if (write(2, p, (size_t)(num + sizeof num - p)) < 0 || write(2, "\n", 1) < 0)
        abort();
    abort();
}
#endif
