/* Per-thread malloc-family counters: the fast path adds to its own thread's block without a lock
 * or an atomic instruction; the worker sums all blocks at a round boundary, and a thread's block
 * is folded into the retired totals when the thread exits.
 *
 * Blocks live in memory of roundtrim's own (never freed), and a thread's TLS holds only a pointer
 * to its block: summing never reads a thread's TLS, so a thread that ends without its exit hook
 * running leaves a block that stays readable and keeps being summed, never a dangling pointer. */
#ifndef ROUNDTRIM_RUNTIME_THREAD_COUNTERS_H
#define ROUNDTRIM_RUNTIME_THREAD_COUNTERS_H

#include <stdint.h>

#include "policy/round_record.h"

struct roundtrim_thread_counters {
    /* Written only by the owning thread; read (relaxed, 64-bit aligned) by the summing thread. */
    uint64_t malloc_calls, free_calls, malloc_bytes, free_bytes;
    struct roundtrim_thread_counters *prev, *next; /* registry links, under its lock */
} __attribute__((aligned(64)));

/* This thread's block; NULL until its first counted call. initial-exec TLS: a fixed offset from
 * the thread pointer, no __tls_get_addr (which may call malloc) on the fast path. */
extern __thread struct roundtrim_thread_counters *roundtrim_tls_block
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

/* Marks the calling thread as roundtrim's own: its allocations are not the application's. */
void roundtrim_thread_mark_internal(void);

/* Cumulative traffic of the whole process so far (live threads + exited ones). */
void roundtrim_counters_total(struct roundtrim_traffic *out);

/* Makes every thread that registers from now on uncounted (pure forwarding). */
void roundtrim_counters_disable(void);

void roundtrim_counters_fork_prepare(void);
void roundtrim_counters_fork_parent(void);
void roundtrim_counters_fork_child(void);

#endif
