#include "runtime/core/env_scan.h"

#include <stdlib.h>
#include <unistd.h>

#include "runtime/core/text.h"

static struct roundtrim_env_scan scan;
static bool scanned;

static void keep(const char *entry)
{
    if (scan.kept_count == ROUNDTRIM_ENV_KEPT)
        scan.overflow = true;
    else
        scan.kept[scan.kept_count++] = entry;
}

bool roundtrim_env_entry_read(const char *s)
{
    switch (s[0]) {
    case 'R':
        return roundtrim_starts_with(s + 1, "OUNDTRIM_");
    case 'N':
        return roundtrim_starts_with(s + 1, "VFLARE_");
    case 'M':
        return roundtrim_starts_with(s + 1, "ALLOC_");
    case 'G':
        return roundtrim_starts_with(s + 1, "LIBC_TUNABLES");
    default:
        return false;
    }
}

static void look_at(const char *s)
{
    if (roundtrim_env_entry_read(s)) {
        keep(s);
        if (s[0] == 'G' && s[14] == '=' && roundtrim_contains(s, "dynamic_weak"))
            scan.loader_changed = true;
    } else if (s[0] == 'L' && s[1] == 'D' && s[2] == '_' &&
               (roundtrim_starts_with(s + 3, "AUDIT=") || roundtrim_starts_with(s + 3, "DEBUG=") ||
                roundtrim_starts_with(s + 3, "DYNAMIC_WEAK="))) {
        scan.loader_changed = true;
    }
}

const struct roundtrim_env_scan *roundtrim_env_scan(void)
{
    if (!scanned) {
        scanned = true;
        for (char **e = environ; e && *e; e++)
            look_at(*e);
    }
    return &scan;
}
