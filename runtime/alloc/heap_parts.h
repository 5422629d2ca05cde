/* The malloc heap split in two: bytes in live blocks (roundtrim's own counters: no lock, no walk)
 * and freed memory the allocator keeps resident (what a trim or purge can give back), read from
 * the allocator's statistics (jemalloc) or from the residency of glibc's arenas. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_HEAP_PARTS_H
#define ROUNDTRIM_RUNTIME_ALLOC_HEAP_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"
#include "policy/traffic.h"

struct roundtrim_heap_parts {
    bool live_known;
    uint64_t live;
    enum roundtrim_skip live_skipped; /* why live is unknown: the counts are not measured */
    bool free_known;
    uint64_t free_resident;
    enum roundtrim_skip free_skipped; /* allocator_unknown, maps_unreadable, ... */
    /* glibc: the largest arena's share of the arenas' resident bytes, permille; 0 unknown. A
     * trim holds one arena at a time: the pause a thread sees follows the largest. */
    uint32_t largest_arena_permille;
    /* glibc: live large blocks (mappings of their own) that its chunk headers show and the
     * counters never saw: allocated around them (glibc's malloc called directly). */
    uint64_t uncounted;
};

/* total: the process's cumulative counts at the boundary. */
void roundtrim_heap_parts_read(const struct roundtrim_traffic *total,
                               struct roundtrim_heap_parts *out);

#endif
