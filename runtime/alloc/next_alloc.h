/* The allocator that comes after roundtrim in link order (glibc's malloc, or a preloaded
 * jemalloc), found with dlsym(RTLD_NEXT), and the static pool that serves the allocations dlsym
 * itself makes while we look for it. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_NEXT_ALLOC_H
#define ROUNDTRIM_RUNTIME_ALLOC_NEXT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/alloc/fast_modes.h"

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
