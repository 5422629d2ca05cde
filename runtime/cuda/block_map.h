/* The map of live device blocks behind the CUDA accounting (runtime/cuda/account.c): an
 * open-addressing hash table (linear probing, backward-shift deletion) that grows with mmap, so
 * that the driver hooks, which run on application threads, add no malloc traffic.
 *
 * Not thread-safe: the caller serialises every call (account.c holds its lock). An entry is found
 * by its key and its key space, the bits of its flags in ROUNDTRIM_CUDA_MAP_KEY_SPACE: the same
 * key in two key spaces is two entries. The other flag bits, and size, link and device, are the
 * caller's. The room check and the removal are inline: they are most of every free's cost. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_BLOCK_MAP_H
#define ROUNDTRIM_RUNTIME_CUDA_BLOCK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/core/hash.h"

#define ROUNDTRIM_CUDA_MAP_KEY_SPACE 6u    /* flag bits that pick the key space */
#define ROUNDTRIM_CUDA_MAP_MIN_SLOTS 1024u /* the first table's slots; it doubles from there */

struct roundtrim_cuda_map_entry {
    uint64_t key;
    uint64_t size;
    uint64_t link;
    int32_t device;
    uint8_t flags;
    uint8_t used; /* a slot of the table holds an entry */
};

/* All zero: empty, with no table yet. */
struct roundtrim_cuda_map {
    struct roundtrim_cuda_map_entry *slots;
    size_t cap, count; /* cap: power of two, 0 before the first insert */
};

/* The entry of (key, key space of flags), or NULL. The pointer is good until the next change of
 * the map. */
struct roundtrim_cuda_map_entry *roundtrim_cuda_map_find(const struct roundtrim_cuda_map *m,
                                                         uint64_t key, unsigned flags);

/* Doubles the table (the first one has ROUNDTRIM_CUDA_MAP_MIN_SLOTS); false, with the table
 * unchanged, when the memory cannot be had. */
bool roundtrim_cuda_map_grow(struct roundtrim_cuda_map *m);

/* Makes sure one more entry fits (a load factor of at most 5/8), growing the table: false when
 * it cannot. Growing moves every entry: pointers from roundtrim_cuda_map_find are stale. */
static inline __attribute__((always_inline)) bool
roundtrim_cuda_map_reserve(struct roundtrim_cuda_map *m)
{
    return (m->count + 1) * 8 <= m->cap * 5 || roundtrim_cuda_map_grow(m);
}

/* Writes e (its used is ignored) into the first free slot of its probe in slots[cap]. */
void roundtrim_cuda_map_place(struct roundtrim_cuda_map_entry *slots, size_t cap,
                              const struct roundtrim_cuda_map_entry *e);

/* Adds e (its used is ignored) after a successful roundtrim_cuda_map_reserve; its key must not be
 * in the map yet. */
static inline void roundtrim_cuda_map_put(struct roundtrim_cuda_map *m,
                                          const struct roundtrim_cuda_map_entry *e)
{
    roundtrim_cuda_map_place(m->slots, m->cap, e);
    m->count++;
}

/* Frees the table: the map is empty again. */
void roundtrim_cuda_map_reset(struct roundtrim_cuda_map *m);

/* The slot where the probe for (key, key space of flags) starts: device addresses have many zero
 * low bits (2 MiB aligned is common), which the tables' hash spreads; the key space is folded in
 * so that a device block and a host block at one address differ. */
static inline size_t roundtrim_cuda_map_home(uint64_t key, unsigned flags, size_t cap)
{
    return roundtrim_hash_slot(key ^ ((uint64_t)(flags & ROUNDTRIM_CUDA_MAP_KEY_SPACE) << 32),
                               (unsigned)__builtin_ctzll(cap));
}

/* Takes out the entry at s (from roundtrim_cuda_map_find); other entries may move. Backward-shift
 * deletion keeps probe chains intact without tombstones. */
static inline __attribute__((always_inline)) void
roundtrim_cuda_map_remove(struct roundtrim_cuda_map *m, struct roundtrim_cuda_map_entry *s)
{
    struct roundtrim_cuda_map_entry *slots = m->slots;
    size_t cap = m->cap, hole = (size_t)(s - slots);
    slots[hole].used = 0;
    for (size_t i = (hole + 1) & (cap - 1); slots[i].used; i = (i + 1) & (cap - 1)) {
        size_t home = roundtrim_cuda_map_home(slots[i].key, slots[i].flags, cap);
        /* Move i into the hole when its home is not in the cyclic range (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            slots[hole] = slots[i];
            slots[i].used = 0;
            hole = i;
        }
    }
    m->count--;
}

#endif
