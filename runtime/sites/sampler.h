/* Sampling allocations by bytes (ROUNDTRIM_SITES): every thread counts down an exponentially
 * distributed number of bytes on the counter the fast path already keeps, and the allocation
 * that crosses the mark is sampled: its stack is taken and the block remembered until freed. */
#ifndef ROUNDTRIM_RUNTIME_SITES_SAMPLER_H
#define ROUNDTRIM_RUNTIME_SITES_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/skip_reason.h"
#include "runtime/alloc/next_alloc.h"
#include "runtime/sites/sample_table.h"
#include "runtime/alloc/thread_counters.h"

/* Maps the tables, loads libunwind and turns the fast path's sampling mode on. Returns
 * RT_SKIP_NONE, or why sampling is off (the start record says it). The constructor, or
 * roundtrim_sampler_start_late. */
enum roundtrim_skip roundtrim_sampler_start(uint64_t mean_bytes);

/* Starts sampling in a running process (ROUNDTRIM_SITES unset, once live memory rises): the
 * same start, from the worker thread, where glibc serves the program (another allocator's
 * counters are taken another way at start: jemalloc's per-thread figures). Returns
 * RT_SKIP_NONE, or why not (allocator_not_glibc, or the start's reason). `round`: the round it
 * starts in. */
enum roundtrim_skip roundtrim_sampler_start_late(uint64_t mean_bytes, uint64_t round);

/* The round sampling started in when it started late, 0 when it ran from the start or not at
 * all. */
uint64_t roundtrim_sampler_since(void);

/* Why sampling is off (RT_SKIP_off when it was not asked for), or RT_SKIP_NONE when it runs. */
enum roundtrim_skip roundtrim_sampler_skipped(void);

/* Why the samples carry no native frames (libunwind_missing: Python frames only), the reason
 * sampling is off, or RT_SKIP_NONE when native frames are taken. */
enum roundtrim_skip roundtrim_sampler_native_skipped(void);

uint64_t roundtrim_sampler_mean(void);

/* The slow part: the countdown of c was crossed by the block p of `bytes` usable bytes. */
void roundtrim_sample_due(void *p, size_t bytes, struct roundtrim_thread_counters *c);

/* After malloc_bytes was advanced by a counted allocation (any variant, sampling on). */
static inline void roundtrim_sample_countdown(void *p, size_t bytes,
                                              struct roundtrim_thread_counters *c)
{
    if (__builtin_expect(c->malloc_bytes >= c->sample_at, 0))
        roundtrim_sample_due(p, bytes, c);
}

/* Counts a block the next allocator handed out, off the fast path (calloc, realloc, C++ new),
 * and runs the countdown when sampling is on. */
static inline void roundtrim_count_block(void *p, size_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    c->malloc_calls++;
    c->malloc_bytes += bytes;
    if (roundtrim_glibc_sizes)
        roundtrim_count_mmapped(c, roundtrim_glibc_header(p), bytes, false);
    if (__builtin_expect(__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_RELAXED), 0))
        roundtrim_sample_countdown(p, bytes, c);
}

/* The interpreter's object allocator (runtime/sites/object_sampler.c) samples what it hands
 * out with a countdown of its own: set while it calls the allocator it wraps, so that the
 * malloc that allocator makes (objects over 512 bytes) is not sampled twice. */
extern __thread bool roundtrim_in_object_allocator __attribute__((visibility("hidden")));
struct roundtrim_object_countdown {
    uint64_t bytes, at, rng; /* at: 0 not drawn yet, UINT64_MAX never */
};
extern __thread struct roundtrim_object_countdown roundtrim_object_countdown
    __attribute__((visibility("hidden")));

/* The slow part: the object countdown was crossed by the block p of `bytes` bytes. */
void roundtrim_sample_object_due(void *p, size_t bytes, uint32_t wrapper);

/* After the object allocator's wrapper number `wrapper` (1, 2, ...) handed out p (sampling
 * on). */
static inline void roundtrim_sample_object(void *p, size_t bytes, uint32_t wrapper)
{
    struct roundtrim_object_countdown *o = &roundtrim_object_countdown;
    o->bytes += bytes;
    if (__builtin_expect(o->bytes >= o->at, 0))
        roundtrim_sample_object_due(p, bytes, wrapper);
}

/* A block whose filter byte is set is being freed: forgets it if it was sampled; when it is one
 * roundtrim allocated while taking a sample, takes its free off the thread's counts again. */
void roundtrim_sample_freed(const void *p);

/* Before a block is freed or moved, on the paths that do not know the mode (realloc, C++
 * delete, the slow path). */
static inline void roundtrim_sample_free_check(const void *p)
{
    if (__builtin_expect(__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_RELAXED), 0) &&
        roundtrim_sample_maybe(p))
        roundtrim_sample_freed(p);
}

struct roundtrim_sampler_totals {
    uint64_t samples;       /* taken since start */
    uint64_t dropped;       /* lost: the live table was full */
    uint64_t sites_dropped; /* lost: the site table was full */
};
void roundtrim_sampler_totals(struct roundtrim_sampler_totals *out);

/* The last round whose sites record is written (worker). */
void roundtrim_sampler_reported(uint32_t round);

/* Fork: waits for stack walks in flight (they hold the loader's lock) and holds new ones off. */
void roundtrim_sampler_fork_prepare(void);
void roundtrim_sampler_fork_parent(void);
void roundtrim_sampler_fork_child(void);

#endif
