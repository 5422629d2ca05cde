/* Per-thread malloc-family counters: the fast path adds to its own thread's block without a lock
 * or an atomic instruction; the worker sums all blocks at a round boundary, and a thread's block
 * is folded into the retired totals when the thread exits. */
#ifndef ROUNDTRIM_RUNTIME_THREAD_COUNTERS_H
#define ROUNDTRIM_RUNTIME_THREAD_COUNTERS_H

#include <stdint.h>

#include "policy/round_record.h"

enum roundtrim_thread_state {
    RT_THREAD_NEW = 0,     /* not yet registered: the next call takes the slow path */
    RT_THREAD_ACTIVE,      /* registered: counted */
    RT_THREAD_INTERNAL,    /* roundtrim's own thread, or the shim is disabled: not counted */
    RT_THREAD_EXITED,      /* folded at thread exit; later calls are too few to matter */
    RT_THREAD_REGISTERING, /* inside the slow path (which may allocate) */
};

struct roundtrim_thread_counters {
    /* Written only by the owning thread; read (relaxed, 64-bit aligned) by the summing thread. */
    uint64_t malloc_calls, free_calls, malloc_bytes, free_bytes;
    unsigned char state;
    struct roundtrim_thread_counters *prev, *next;
} __attribute__((aligned(64)));

/* initial-exec TLS: a fixed offset from the thread pointer, no __tls_get_addr (which may call
 * malloc) on the fast path. */
extern __thread struct roundtrim_thread_counters roundtrim_tls
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The slow path: registers this thread (first call on a thread). */
void roundtrim_thread_register(void);

static inline void roundtrim_count_alloc(uint64_t bytes)
{
    if (__builtin_expect(roundtrim_tls.state == RT_THREAD_NEW, 0))
        roundtrim_thread_register();
    roundtrim_tls.malloc_calls++;
    roundtrim_tls.malloc_bytes += bytes;
}

static inline void roundtrim_count_free(uint64_t bytes)
{
    if (__builtin_expect(roundtrim_tls.state == RT_THREAD_NEW, 0))
        roundtrim_thread_register();
    roundtrim_tls.free_calls++;
    roundtrim_tls.free_bytes += bytes;
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
