/* How much of the process's anonymous memory is roundtrim's own: the resident pages of its
 * mappings (runtime/core/pages.h), the sampler's tables and records, which grow as sites are
 * found and are no growth of the program's. */
#ifndef ROUNDTRIM_RUNTIME_CORE_PAGES_RESIDENT_H
#define ROUNDTRIM_RUNTIME_CORE_PAGES_RESIDENT_H

#include <stdbool.h>
#include <stdint.h>

/* The bytes of roundtrim's mappings resident now and written to (a page only read is the kernel's
 * shared zero page, which the resident set does not count), read from the process's page map;
 * false when it cannot be read. Pages still shared with the parent a process was forked from are
 * not counted. */
bool roundtrim_pages_resident(uint64_t *bytes);

#endif
