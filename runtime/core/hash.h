/* The hash of roundtrim's open-addressing tables: Fibonacci hashing (a word times 2^64/phi, the
 * top bits kept) spreads pointers and other keys whose low bits repeat; keys of several words
 * are folded into one with roundtrim_hash_mix first. */
#ifndef ROUNDTRIM_RUNTIME_CORE_HASH_H
#define ROUNDTRIM_RUNTIME_CORE_HASH_H

#include <stdint.h>

#define ROUNDTRIM_HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* The home slot of key in a table of 2^bits slots (1 <= bits <= 32). */
static inline uint32_t roundtrim_hash_slot(uint64_t key, unsigned bits)
{
    return (uint32_t)((key * ROUNDTRIM_HASH_GOLDEN) >> (64 - bits));
}

/* The starting value of roundtrim_hash_mix's chain. */
#define ROUNDTRIM_HASH_START 0xcbf29ce484222325ull

/* Folds v into the running hash h; every bit of v reaches every bit of the result. */
static inline uint64_t roundtrim_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v + ROUNDTRIM_HASH_GOLDEN + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

#endif
