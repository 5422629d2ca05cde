/* What the allocator serving malloc can tell and do: its name, the bytes it holds in live blocks,
 * giving freed memory back to the OS, and glibc's tuning knobs. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_ALLOCATOR_OPS_H
#define ROUNDTRIM_RUNTIME_ALLOC_ALLOCATOR_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/options.h"
#include "policy/skip_reason.h"

enum roundtrim_allocator { RT_ALLOC_GLIBC, RT_ALLOC_JEMALLOC, RT_ALLOC_OTHER };

/* Looks at the library the next malloc lives in (after the next allocator was resolved). */
void roundtrim_allocator_detect(void);

enum roundtrim_allocator roundtrim_allocator_kind(void);
const char *roundtrim_allocator_name(void);

/* Why the malloc-family counts are not measured (the program's malloc does not reach roundtrim:
 * allocator_before_roundtrim), or RT_SKIP_NONE when they are. */
enum roundtrim_skip roundtrim_allocator_counts_skipped(void);

/* jemalloc's own statistics (bytes): false for other allocators or when they are off. */
struct roundtrim_je_stats {
    uint64_t allocated, resident, metadata;
};
bool roundtrim_allocator_je_stats(struct roundtrim_je_stats *out);

/* Gives free memory back to the OS: malloc_trim(0) or a purge of all jemalloc arenas. Returns the
 * action bit that ran (RT_ACT_TRIM, RT_ACT_PURGE) or 0, and its duration. */
unsigned roundtrim_allocator_release(uint64_t *us);

/* An address inside glibc's code (its malloc_trim), or NULL when the allocator is not glibc. */
const void *roundtrim_allocator_glibc_code(void);

/* The program called malloc_trim itself (the interposed symbol, or a dlsym of it); the count since
 * start, roundtrim's own release included. */
void roundtrim_program_trim_note(void);
uint64_t roundtrim_program_trim_count(void);

/* Arena cap and mmap threshold (glibc only, called before the program starts its threads). */
void roundtrim_allocator_tune(const struct roundtrim_config *cfg);

#endif
