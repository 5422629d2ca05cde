/* The parts of the process's memory a round's record splits it into (its "memory" object). */
#ifndef ROUNDTRIM_POLICY_MEM_PARTS_H
#define ROUNDTRIM_POLICY_MEM_PARTS_H

#include <stdint.h>

#include "policy/skip_reason.h"

/* Where the process's memory is when the round ends (before its cleanup): parts of the resident
 * set that add up to it, each from a source of its own, and the device memory. A part that
 * could not be read has a reason instead (never a silent zero). */
enum roundtrim_mem_part {
#define RT_MEM_PART(id, name, resident, words, meaning) id,
#include "policy/mem_parts.def"
    RT_PART_COUNT
};

struct roundtrim_memory_parts {
    enum roundtrim_skip skipped; /* why nothing was measured (exiting) */
    uint64_t rss;
    uint64_t read_us; /* how long reading all of it took */
    /* How far the known parts exceed rss: live blocks holding pages never touched (a large
     * calloc served by mmap), which count as live but are not resident. */
    uint64_t over_rss;
    /* Of heap_live, what the allocator's own figures show and the counters did not see (large
     * blocks from glibc's malloc called directly). */
    uint64_t heap_uncounted;
    uint64_t value[RT_PART_COUNT];
    enum roundtrim_skip part_skipped[RT_PART_COUNT]; /* set for each part not measured */
    uint32_t largest_arena_permille; /* glibc: the largest arena's share of the heap; 0 unknown */
};

/* The stable name of a part ("heap_live", ...). */
const char *roundtrim_mem_part_name(enum roundtrim_mem_part p);

#endif
