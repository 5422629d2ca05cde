/* glibc's heap trimmed in bounded holds.
 *
 * malloc_trim takes each arena's lock for the whole of that arena's walk, and a thread that
 * allocates in the arena waits all that time; it also makes one madvise call per free chunk,
 * and the call, not the byte, is what costs (60-100 us a call on hosts whose page tables are
 * virtualized in software). Here the worker walks the same free memory itself: each hold locks
 * one arena, gathers the whole pages inside its top chunk and its free chunks, largest first,
 * and gives them back as many ranges a call as the kernel takes (runtime/alloc/page_release.h),
 * from where the previous hold stopped, for at most a given time, and lets go.
 *
 * This reads glibc's private arena layout (64-bit, glibc 2.27 and later). Every arena is checked
 * against that layout before it is walked; where anything does not match, nothing is walked and
 * the caller keeps to malloc_trim. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_GLIBC_ARENAS_H
#define ROUNDTRIM_RUNTIME_ALLOC_GLIBC_ARENAS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "policy/release_cost.h"
#include "policy/skip_reason.h"

/* glibc's default cap is 8 arenas a core */
#define ROUNDTRIM_ARENAS_MAX   1024
#define ROUNDTRIM_ARENA_RANGES 2048

struct roundtrim_arena_walk {
    unsigned count;
    uintptr_t arena[ROUNDTRIM_ARENAS_MAX];
    /* where the next hold of each arena starts: its place in the walk's order (the top chunk,
     * then the bins from the largest sizes down), the chunks of that list already done, and the
     * bytes done of the next one */
    unsigned place[ROUNDTRIM_ARENAS_MAX];
    uint64_t skip[ROUNDTRIM_ARENAS_MAX];
    uintptr_t offset[ROUNDTRIM_ARENAS_MAX];
    bool done[ROUNDTRIM_ARENAS_MAX];
    /* the heaps' address ranges, ascending, for checking every pointer before it is followed */
    unsigned ranges;
    uintptr_t lo[ROUNDTRIM_ARENA_RANGES], hi[ROUNDTRIM_ARENA_RANGES];
    /* the ranges gathered for the next release call, and their units (policy/release_cost.h) */
    struct iovec batch[ROUNDTRIM_RELEASE_BATCH_MAX];
    unsigned batched;
    uint64_t batch_units;
};

/* One hold's outcome. */
struct roundtrim_arena_hold {
    uint64_t us;      /* how long the arena's lock was held */
    uint64_t advised; /* bytes of free pages given back (or already given back before) */
    uint64_t calls;   /* release system calls made */
    bool waited;      /* a thread of the program waited for the lock meanwhile */
    bool arena_done;  /* the arena's bins are all walked */
};

/* Whether this glibc's arena layout is the one known here (64-bit, 2.27 and later). */
bool roundtrim_arenas_layout_known(void);

/* Finds and checks the arenas (worker thread: reads /proc/self/maps and the loader's tables),
 * reading again a few times where the program changed them meanwhile. RT_SKIP_NONE when found;
 * else why not: nothing may be walked. */
enum roundtrim_skip roundtrim_arenas_find(const void *libc_function,
                                          struct roundtrim_arena_walk *w);

/* Reads the heaps' address ranges again (worker thread, no arena lock held): an arena grown or
 * shrunk since they were read holds chunks outside them, which a hold will not follow. */
bool roundtrim_arenas_reread_heaps(struct roundtrim_arena_walk *w);

/* One hold of arena i for about budget_us (at least one release call's worth of progress), each
 * call sized by what cost says calls take here and teaching it. False when the arena no longer
 * matches the layout: it is left alone (marked done). */
bool roundtrim_arenas_hold(struct roundtrim_arena_walk *w, unsigned i, uint64_t budget_us,
                           struct roundtrim_release_cost *cost, struct roundtrim_arena_hold *out);

#endif
