/* The allocator that comes after roundtrim in link order (glibc's malloc, or a preloaded
 * jemalloc), found with dlsym(RTLD_NEXT), and the static pool that serves the allocations dlsym
 * itself makes while we look for it. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_NEXT_ALLOC_H
#define ROUNDTRIM_RUNTIME_ALLOC_NEXT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct roundtrim_next_alloc {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    size_t (*malloc_usable_size)(void *);
};

/* Until resolution finishes these point at the bootstrap pool's functions. */
extern struct roundtrim_next_alloc roundtrim_next __attribute__((visibility("hidden")));

/* How the fast path learns a block's usable size. glibc keeps it in the chunk header just
 * before the block, and reading it there costs a few instructions instead of a call; the layout
 * is checked against glibc's own malloc_usable_size once at start (roundtrim_glibc_sizes).
 * Other allocators are asked through their malloc_usable_size. The hooks' mode, one byte for
 * each: off (ROUNDTRIM_FAST_OFF) while something waits for the slow path to run (a worker start
 * asked for by a signal handler), plain counting, or counting with the sampling countdown
 * (ROUNDTRIM_SITES). */
enum { ROUNDTRIM_FAST_OFF = 0, ROUNDTRIM_FAST_PLAIN = 1, ROUNDTRIM_FAST_SAMPLING = 2 };
extern bool roundtrim_glibc_sizes __attribute__((visibility("hidden")));
extern uint8_t roundtrim_fast_glibc __attribute__((visibility("hidden")));
extern uint8_t roundtrim_fast_other __attribute__((visibility("hidden")));
/* Set once the sampler's tables exist (never cleared): resume then picks the sampling mode. */
extern bool roundtrim_sampling_on __attribute__((visibility("hidden")));

/* The glibc fast paths of malloc and free test no mode: the mode is in the functions they call.
 * malloc calls roundtrim_fast_next.malloc and then counts, free counts and then calls
 * roundtrim_fast_next.free, on a thread whose roundtrim_tls_fast is set. In plain counting these
 * are the allocator's own; in the other modes they are the entries the hooks give for the mode,
 * which do the mode's part: off, they send the thread to the slow path (roundtrim_tls_fast =
 * NULL) and free does what the slow path does besides counting; sampling, free forgets a sampled
 * block and malloc sends the allocation that crosses the countdown to the sampling path. */
struct roundtrim_fast_calls {
    void *(*malloc)(size_t);
    void (*free)(void *);
};
extern struct roundtrim_fast_calls roundtrim_fast_next __attribute__((visibility("hidden")));
/* By mode; [ROUNDTRIM_FAST_PLAIN] is the allocator's own once it is known. */
extern struct roundtrim_fast_calls roundtrim_fast_modes[3] __attribute__((visibility("hidden")));

static inline void roundtrim_fast_next_set(int mode)
{
    const struct roundtrim_fast_calls *m = &roundtrim_fast_modes[mode];
    __atomic_store_n(&roundtrim_fast_next.malloc, __atomic_load_n(&m->malloc, __ATOMIC_RELAXED),
                     __ATOMIC_SEQ_CST);
    __atomic_store_n(&roundtrim_fast_next.free, __atomic_load_n(&m->free, __ATOMIC_RELAXED),
                     __ATOMIC_SEQ_CST);
}

/* Sends every call through the slow path until resumed (async-signal-safe). */
static inline void roundtrim_fast_path_suspend(void)
{
    roundtrim_fast_next_set(ROUNDTRIM_FAST_OFF);
    __atomic_store_n(&roundtrim_fast_glibc, ROUNDTRIM_FAST_OFF, __ATOMIC_SEQ_CST);
    __atomic_store_n(&roundtrim_fast_other, ROUNDTRIM_FAST_OFF, __ATOMIC_SEQ_CST);
}

/* Set once the bootstrap pool handed out a block (in practice never: dlsym's lookups of the
 * allocator allocate nothing when they succeed). The fast paths then stay off for good, so that
 * free need not test every block against the pool. */
extern bool roundtrim_bootstrap_used __attribute__((visibility("hidden")));

static inline void roundtrim_fast_path_resume(void)
{
    if (__atomic_load_n(&roundtrim_bootstrap_used, __ATOMIC_ACQUIRE))
        return;
    bool glibc = __atomic_load_n(&roundtrim_glibc_sizes, __ATOMIC_RELAXED);
    uint8_t mode = __atomic_load_n(&roundtrim_sampling_on, __ATOMIC_ACQUIRE)
                       ? ROUNDTRIM_FAST_SAMPLING
                       : ROUNDTRIM_FAST_PLAIN;
    __atomic_store_n(&roundtrim_fast_glibc, glibc ? mode : ROUNDTRIM_FAST_OFF, __ATOMIC_SEQ_CST);
    __atomic_store_n(&roundtrim_fast_other, glibc ? ROUNDTRIM_FAST_OFF : mode, __ATOMIC_SEQ_CST);
    /* Another allocator than glibc: no thread takes the glibc fast path, the allocator's own
     * functions serve its call. */
    roundtrim_fast_next_set(glibc ? mode : ROUNDTRIM_FAST_PLAIN);
}

/* Looks up the next allocator (idempotent; thread-safe). */
void roundtrim_next_alloc_resolve(void);

/* The static pool: blocks handed out while dlsym was looking up the allocator. */
#define ROUNDTRIM_BOOTSTRAP_POOL_BYTES (256 * 1024)
extern char roundtrim_bootstrap_pool[ROUNDTRIM_BOOTSTRAP_POOL_BYTES]
    __attribute__((visibility("hidden")));

static inline bool roundtrim_bootstrap_owns(const void *p)
{
    return (uintptr_t)p - (uintptr_t)roundtrim_bootstrap_pool < ROUNDTRIM_BOOTSTRAP_POOL_BYTES;
}

size_t roundtrim_bootstrap_usable_size(const void *p);

static inline size_t roundtrim_glibc_header(const void *p)
{
    return ((const size_t *)p)[-1];
}

/* bit 1 (IS_MMAPPED): the chunk has a whole header of its own; otherwise the next chunk's
 * prev_size word is part of this block. (header & 2) * 4 is that extra word, branch-free. */
static inline size_t roundtrim_glibc_usable_from_header(size_t header)
{
    return (header & ~(size_t)7) - sizeof(size_t) - (header & 2) * (sizeof(size_t) / 2);
}

static inline size_t roundtrim_glibc_header_usable_size(const void *p)
{
    return roundtrim_glibc_usable_from_header(roundtrim_glibc_header(p));
}

/* Set while this thread is inside a call a hook makes into the next allocator for its own
 * purposes (asking a block's size). tcmalloc's malloc_usable_size allocates with operator new on
 * first use, and jemalloc, mimalloc and tcmalloc may allocate while they initialise: such calls
 * come back to our hooks, which then forward without counting (counting would ask the size
 * again, without end). initial-exec TLS: one load from the thread pointer. */
extern __thread bool roundtrim_in_next_alloc
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The next allocator's malloc_usable_size, called under the guard. */
static inline size_t roundtrim_next_usable_size(void *p)
{
    roundtrim_in_next_alloc = true;
    size_t n = roundtrim_next.malloc_usable_size(p);
    roundtrim_in_next_alloc = false;
    return n;
}

/* Usable size of a block the next allocator handed out (never called with NULL, nor while
 * roundtrim_in_next_alloc is set). */
static inline size_t roundtrim_usable_size(void *p)
{
    if (__builtin_expect(roundtrim_glibc_sizes, 1))
        return roundtrim_glibc_header_usable_size(p);
    return roundtrim_next_usable_size(p);
}

#endif
