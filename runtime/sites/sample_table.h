/* The blocks that were sampled and not yet freed, by address, so that their frees are seen.
 *
 * A fixed open-addressing table in memory of its own (mmap), filled and emptied with atomic
 * instructions only: any thread inserts after its malloc returned and removes before its free is
 * forwarded, without a lock. Before any lookup, `free` tests one byte of a filter indexed by the
 * address: almost every block was not sampled, and for those the filter byte is 0. */
#ifndef ROUNDTRIM_RUNTIME_SITES_SAMPLE_TABLE_H
#define ROUNDTRIM_RUNTIME_SITES_SAMPLE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROUNDTRIM_SAMPLE_FILTER_BITS 20

/* One counter per slot of addresses: how many live samples hash there (saturates at 255). NULL
 * until the table exists. */
extern uint8_t *roundtrim_sample_filter __attribute__((visibility("hidden")));

static inline bool roundtrim_sample_maybe(const void *p)
{
    uintptr_t slot = ((uintptr_t)p >> 4) & ((1u << ROUNDTRIM_SAMPLE_FILTER_BITS) - 1);
    return __atomic_load_n(&roundtrim_sample_filter[slot], __ATOMIC_RELAXED) != 0;
}

/* Maps the table and the filter; false when the memory could not be had. */
bool roundtrim_sample_table_init(void);

/* Remembers a sampled block; false when the table is full (the sample is then dropped). wrapper:
 * the object allocator's wrapper that sampled it (runtime/sites/object_sampler.h), 0 for a
 * block of malloc's. */
bool roundtrim_sample_table_insert(const void *p, uint32_t site, uint32_t round, uint64_t weight,
                                   uint32_t wrapper);

/* Remembers a block roundtrim itself allocated while taking a sample (libunwind's thread data)
 * and that may outlive it: its free is then roundtrim's too, not the program's. Never scanned.
 * false when the table is full. */
bool roundtrim_sample_table_insert_own(const void *p, uint64_t bytes);

enum roundtrim_sample_found {
    ROUNDTRIM_SAMPLE_NOT_FOUND = 0,
    ROUNDTRIM_SAMPLE_PROGRAM, /* a sample of the program's: *site and *weight */
    ROUNDTRIM_SAMPLE_OWN,     /* a block of insert_own: *weight holds its bytes */
};

/* Called for a block being freed whose filter byte is set: when it was remembered, removes it
 * and says which kind it was. `round` is the round in progress; `reported` the last round whose
 * sites record is written: a sample that was live at the end of a round whose record is not
 * written yet is kept (as freed, with the round of its free) until it is. */
enum roundtrim_sample_found roundtrim_sample_table_remove(const void *p, uint32_t round,
                                                          uint32_t reported, uint32_t *site,
                                                          uint64_t *weight);

/* One sample as the worker sees it: `freed_in` is 0 for a block still live. */
struct roundtrim_sample_view {
    uint32_t site, round, freed_in;
    uint64_t weight;
    uint32_t wrapper; /* as inserted */
};

/* Calls fn for every sample live or kept as freed, a consistent copy each, and forgets the kept
 * ones no record after round `done` needs (worker only). Returns the number of live samples. */
uint64_t roundtrim_sample_table_scan(void (*fn)(const struct roundtrim_sample_view *, void *),
                                     void *arg, uint32_t done);

/* Fork child: the parent's rounds are not the child's; live samples become samples of no
 * round (0), kept ones are forgotten. */
void roundtrim_sample_table_fork_child(void);

#endif
