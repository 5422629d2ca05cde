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

static void look_at(const char *s)
{
    switch (s[0]) {
    case 'R':
        if (roundtrim_starts_with(s + 1, "OUNDTRIM_"))
            keep(s);
        break;
    case 'N':
        if (roundtrim_starts_with(s + 1, "VFLARE_"))
            keep(s);
        break;
    case 'M':
        if (roundtrim_starts_with(s + 1, "ALLOC_"))
            keep(s);
        break;
    case 'G':
        if (roundtrim_starts_with(s + 1, "LIBC_TUNABLES")) {
            keep(s);
            if (s[14] == '=' && roundtrim_contains(s, "dynamic_weak"))
                scan.loader_changed = true;
        }
        break;
    case 'L':
        if (s[1] == 'D' && s[2] == '_' &&
            (roundtrim_starts_with(s + 3, "AUDIT=") || roundtrim_starts_with(s + 3, "DEBUG=") ||
             roundtrim_starts_with(s + 3, "DYNAMIC_WEAK=")))
            scan.loader_changed = true;
        break;
    default:
        break;
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
