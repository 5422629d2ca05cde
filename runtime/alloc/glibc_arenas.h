/* glibc's heap trimmed in bounded holds.
 *
 * malloc_trim takes each arena's lock for the whole of that arena's walk, and a thread that
 * allocates in the arena waits all that time. Here the worker walks the same bins itself: each
 * hold locks one arena, madvise(MADV_DONTNEED)s the whole pages inside its free chunks, as
 * malloc_trim does, from where the previous hold stopped, for at most a given time, and lets go.
 *
 * This reads glibc's private arena layout (64-bit, glibc 2.27 and later). Every arena is checked
 * against that layout before it is walked; where anything does not match, nothing is walked and
 * the caller keeps to malloc_trim. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_GLIBC_ARENAS_H
#define ROUNDTRIM_RUNTIME_ALLOC_GLIBC_ARENAS_H

#include <stdbool.h>
#include <stdint.h>

/* glibc's default cap is 8 arenas a core */
#define ROUNDTRIM_ARENAS_MAX   1024
#define ROUNDTRIM_ARENA_RANGES 2048

struct roundtrim_arena_walk {
    unsigned count;
    uintptr_t arena[ROUNDTRIM_ARENAS_MAX];
    /* where the next hold of each arena starts: its bin, the chunks of it already done, and
     * the bytes done of the next one */
    unsigned bin[ROUNDTRIM_ARENAS_MAX];
    uint64_t skip[ROUNDTRIM_ARENAS_MAX];
    uintptr_t offset[ROUNDTRIM_ARENAS_MAX];
    bool done[ROUNDTRIM_ARENAS_MAX];
    /* the heaps' address ranges, ascending, for checking every pointer before it is followed */
    unsigned ranges;
    uintptr_t lo[ROUNDTRIM_ARENA_RANGES], hi[ROUNDTRIM_ARENA_RANGES];
};

/* One hold's outcome. */
struct roundtrim_arena_hold {
    uint64_t us;      /* how long the arena's lock was held */
    uint64_t advised; /* bytes of free pages given back (or already given back before) */
    bool waited;      /* a thread of the program waited for the lock meanwhile */
    bool arena_done;  /* the arena's bins are all walked */
};

/* Finds and checks the arenas (worker thread: reads /proc/self/maps and the loader's tables).
 * False when their layout is not the one known here: nothing may be walked. */
bool roundtrim_arenas_find(const void *libc_function, struct roundtrim_arena_walk *w);

/* One hold of arena i for about budget_us (at least one chunk list's worth of progress). False
 * when the arena no longer matches the layout: it is left alone (marked done). */
bool roundtrim_arenas_hold(struct roundtrim_arena_walk *w, unsigned i, uint64_t budget_us,
                           struct roundtrim_arena_hold *out);

#endif
