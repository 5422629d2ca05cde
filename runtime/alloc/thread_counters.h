/* Per-thread malloc-family counters: the fast path adds to its own thread's block without a lock
 * or an atomic instruction; a round boundary sums all blocks at its own instant.
 *
 * Blocks live in memory of roundtrim's own and are never freed or unlinked: every block ever
 * handed out stays on one list whose links are published with release stores, so a signal
 * handler can walk it with plain loads, without a lock. A block's counts are cumulative over
 * every thread that ever owned it: when a thread exits its block goes back to a free list with
 * its counts, and the next thread to take it counts on from there, so the sum over the list is
 * the whole process's traffic with no folding step that a handler could see half done. A
 * thread's TLS holds only pointers to its block: a thread that ends without its exit hook
 * running leaves a block that stays readable and keeps being summed.
 *
 * With jemalloc serving the program through roundtrim, a block's bytes come from jemalloc's own
 * per-thread cumulative counters (`thread.allocatedp`, `thread.deallocatedp`: usable sizes,
 * exact), which spares the fast path a malloc_usable_size call per block. Only the owning thread
 * ever reads them: each counted call copies jemalloc's figure, less an offset, into the block's
 * byte count, so readers of the block (a signal handler on any thread) see plain values of
 * roundtrim's own memory, never jemalloc's thread data, which dies with its thread. The offset
 * is taken whenever the figure must continue from the block's own count: when a thread takes
 * the block (counts are cumulative per block), when counting resumes after a pause (what
 * roundtrim allocated meanwhile is left out) and in a fork child (counts restart at zero). */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_THREAD_COUNTERS_H
#define ROUNDTRIM_RUNTIME_ALLOC_THREAD_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/traffic.h"

struct roundtrim_thread_counters {
    /* Written only by the owning thread; read (relaxed, 64-bit aligned) by the summing thread. */
    uint64_t malloc_calls, free_calls, malloc_bytes, free_bytes;
    /* The owning thread's jemalloc counters, or NULL where bytes come from usable sizes; the
     * bytes are *je_allocated + je_allocated_off (mod 2^64). Owner-only. */
    const uint64_t *je_allocated, *je_deallocated;
    uint64_t je_allocated_off, je_deallocated_off;
    /* Allocation sampling (owner only): the next sample is taken when malloc_bytes reaches
     * sample_at (0: not drawn yet; UINT64_MAX: never, an uncounted thread); rng is the thread's
     * random state for drawing the distances. */
    uint64_t sample_at, rng;
    /* glibc: bytes of live blocks that are mappings of their own (added when handed out, taken
     * off when freed, mod 2^64), kept apart so that the arenas' own bytes are known. Rarely
     * touched: only for large blocks. */
    uint64_t mmapped_bytes;
} __attribute__((aligned(64)));

/* This thread's block; NULL until its first counted call. initial-exec TLS: a fixed offset from
 * the thread pointer, no __tls_get_addr (which may call malloc) on the fast path. */
extern __thread struct roundtrim_thread_counters *roundtrim_tls_block
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The block the glibc fast paths of malloc and free count on, or NULL: the one test they make.
 * Only the hooks set it (to roundtrim_tls_block, when glibc's chunk headers give the sizes);
 * whenever roundtrim_tls_block changes it goes back to NULL, so that a block given back at thread
 * exit is never counted on by the thread that left it. */
extern __thread struct roundtrim_thread_counters *roundtrim_tls_fast
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The slow path: gives the calling thread its block (or a block nobody sums, for roundtrim's
 * own threads, a disabled library, a thread past its exit hook). Never NULL. */
struct roundtrim_thread_counters *roundtrim_thread_register(void);

static inline struct roundtrim_thread_counters *roundtrim_thread_block(void)
{
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    if (__builtin_expect(c == NULL, 0))
        c = roundtrim_thread_register();
    return c;
}

static inline void roundtrim_count_alloc(uint64_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    c->malloc_calls++;
    c->malloc_bytes += bytes;
}

static inline void roundtrim_count_free(uint64_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    c->free_calls++;
    c->free_bytes += bytes;
}

/* glibc's large blocks, each a mapping of its own: counted apart as well (header read before
 * the block is freed). */
static inline void roundtrim_count_mmapped(struct roundtrim_thread_counters *c, size_t header,
                                           size_t bytes, bool freed)
{
    if (__builtin_expect((header & 2) != 0, 0)) /* IS_MMAPPED */
        c->mmapped_bytes += freed ? (uint64_t)0 - bytes : bytes;
}

/* A glibc block handed out or freed, counted from its chunk header: the usable size of a heap
 * chunk (the next chunk's prev_size word included), and, for a chunk mapped on its own, one word
 * less and its bytes on the mmapped counter too. The same sizes as
 * roundtrim_glibc_usable_from_header, with the mapped case inside the one branch it needs
 * anyway: the fast paths' plain case is two instructions shorter each. */
static inline void roundtrim_count_glibc_alloc(struct roundtrim_thread_counters *c, size_t header)
{
    /* (header & ~7) - 8, one instruction shorter: the size bits are a multiple of 8. */
    uint64_t bytes = (header - sizeof(size_t)) & ~(size_t)7;
    if (__builtin_expect((header & 2) != 0, 0)) { /* IS_MMAPPED */
        bytes -= sizeof(size_t);
        c->mmapped_bytes += bytes;
    }
    c->malloc_calls++;
    c->malloc_bytes += bytes;
}

static inline void roundtrim_count_glibc_free(struct roundtrim_thread_counters *c, size_t header)
{
    uint64_t bytes = (header - sizeof(size_t)) & ~(size_t)7;
    if (__builtin_expect((header & 2) != 0, 0)) {
        bytes -= sizeof(size_t);
        c->mmapped_bytes -= bytes;
    }
    c->free_calls++;
    c->free_bytes += bytes;
}

/* Whether c is a block whose traffic is summed (not the calling thread's uncounted sink). */
bool roundtrim_thread_counted(const struct roundtrim_thread_counters *c);

/* The jemalloc route (c->je_allocated set): one more call, the bytes as jemalloc counts them.
 * Called after the allocator's call returns, so that its figure includes the block. */
static inline void roundtrim_je_count_alloc(struct roundtrim_thread_counters *c)
{
    c->malloc_calls++;
    c->malloc_bytes = *c->je_allocated + c->je_allocated_off;
}

static inline void roundtrim_je_count_free(struct roundtrim_thread_counters *c)
{
    c->free_calls++;
    c->free_bytes = *c->je_deallocated + c->je_deallocated_off;
}

/* Takes bytes from jemalloc's per-thread counters, for every thread that registers from now on
 * and for the calling one, when jemalloc (whose mallctl this is) serves the program through
 * roundtrim and answers `thread.allocatedp`. Returns whether it does. */
typedef int (*roundtrim_mallctl_fn)(const char *, void *, size_t *, void *, size_t);
bool roundtrim_counters_use_jemalloc(roundtrim_mallctl_fn mallctl);

/* Marks the calling thread as roundtrim's own: its allocations are not the application's. */
void roundtrim_thread_mark_internal(void);

/* roundtrim's own work on an application thread (starting the worker, taking a sample): what
 * it allocates is not counted. Returns what roundtrim_counting_resume must be given back. */
struct roundtrim_thread_counters *roundtrim_counting_pause(void);
void roundtrim_counting_resume(struct roundtrim_thread_counters *saved);

/* Cumulative traffic of the whole process so far (live threads + exited ones). Takes no lock and
 * allocates nothing: async-signal-safe. */
void roundtrim_counters_total(struct roundtrim_traffic *out);

/* Bytes held by live blocks now: what the counters say, plus what a fork child inherited from
 * its parent (the child's counts start at zero). Taken from a total read before. */
uint64_t roundtrim_counters_live(const struct roundtrim_traffic *total);
/* Of those, glibc's large blocks that are mappings of their own. */
uint64_t roundtrim_counters_mmapped_live(const struct roundtrim_traffic *total);

/* Makes every thread that registers from now on uncounted (pure forwarding). */
void roundtrim_counters_disable(void);

void roundtrim_counters_fork_prepare(void);
void roundtrim_counters_fork_parent(void);
void roundtrim_counters_fork_child(void);

#endif
