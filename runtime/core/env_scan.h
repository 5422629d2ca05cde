/* The one pass over the environment at start: the variables the settings read (the option
 * table's ROUNDTRIM_ and NVFLARE_ names, glibc's MALLOC_ and GLIBC_TUNABLES) and whether the
 * loader was told anything that changes what dlsym answers (LD_AUDIT, LD_DEBUG,
 * LD_DYNAMIC_WEAK, a GLIBC_TUNABLES with dynamic_weak). Every process pays for each of its
 * variables here: one test of the first letter for most of them.
 *
 * Never called in a secure-exec process (its callers ask AT_SECURE first). Read at start only:
 * what is kept points into the environment as it was then. */
#ifndef ROUNDTRIM_RUNTIME_CORE_ENV_SCAN_H
#define ROUNDTRIM_RUNTIME_CORE_ENV_SCAN_H

#include <stdbool.h>

#define ROUNDTRIM_ENV_KEPT 64

struct roundtrim_env_scan {
    const char *kept[ROUNDTRIM_ENV_KEPT]; /* "NAME=value", in the environment's order */
    unsigned kept_count;
    bool overflow;       /* more settings variables than kept: look them up with getenv */
    bool loader_changed; /* LD_AUDIT, LD_DEBUG, LD_DYNAMIC_WEAK or GLIBC_TUNABLES dynamic_weak */
};

/* Whether an environment entry is one the scan keeps: a ROUNDTRIM_, NVFLARE_ or MALLOC_ name, or
 * GLIBC_TUNABLES. */
bool roundtrim_env_entry_read(const char *entry);

/* The scan, made at the first call. */
const struct roundtrim_env_scan *roundtrim_env_scan(void);

#endif
