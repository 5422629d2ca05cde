/* The modes of the malloc/free fast path, in one table, with their transitions.
 *
 * A thread whose roundtrim_tls_fast is set takes the glibc fast path: malloc calls
 * roundtrim_fast_next.malloc and then counts from the chunk header; free counts and then calls
 * roundtrim_fast_next.free. The fast path tests no mode: the mode is in those two functions.
 * Two bytes say the mode to the other paths (shim/alloc_hooks.c), one for glibc's route and one
 * for another allocator's (jemalloc, tcmalloc, mimalloc: sizes asked through its
 * malloc_usable_size, or jemalloc's own counters read):
 *
 *   state              fast_glibc  fast_other  roundtrim_fast_next         a thread then
 *   before the lookup  OFF         OFF         the bootstrap pool's        takes the slow path
 *   glibc, counting    PLAIN       OFF         glibc's malloc and free     counts inline
 *   glibc, sampling    SAMPLING    OFF         the sampling entries        counts inline; the
 *                                                                          allocation crossing
 *                                                                          its countdown and a
 *                                                                          sampled block's free
 *                                                                          go the sampling way
 *   other, counting    OFF         PLAIN       the allocator's own         counts out of line
 *   other, sampling    OFF         SAMPLING    the allocator's own         counts and samples
 *                                                                          out of line
 *   suspended          OFF         OFF         the off entries             leaves the fast path
 *                                                                          at its next call; the
 *                                                                          slow path polls
 *
 * Transitions (each a few atomic stores; the bytes first, then the entries):
 *   resume   the lookup found the allocator (next_alloc.c); a worker start asked for by a signal
 *            handler ran from the program's next malloc (worker_thread.c); the sampler's tables
 *            were made (sites/sampler.c: resume then picks sampling); a fork child. Never once
 *            the bootstrap pool handed out a block: its blocks are not the allocator's.
 *   suspend  a signal handler asks for a worker start (async-signal-safe); the bootstrap pool
 *            handed out a block (for good).
 * Sampling is never turned off again (roundtrim_sampling_on is set once), and which route is
 * taken (roundtrim_glibc_sizes) is known before the first resume and never changes.
 *
 * A debug build (make debug: ROUNDTRIM_DEBUG) checks these rules after each transition and on
 * the paths that read the mode, and that a thread on the fast path counts on its own block. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_FAST_MODES_H
#define ROUNDTRIM_RUNTIME_ALLOC_FAST_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* glibc keeps a block's usable size in the chunk header just before it, and reading it there
 * costs a few instructions instead of a call; the layout is checked against glibc's own
 * malloc_usable_size once at start. Other allocators are asked through their
 * malloc_usable_size. */
extern bool roundtrim_glibc_sizes __attribute__((visibility("hidden")));

enum { ROUNDTRIM_FAST_OFF = 0, ROUNDTRIM_FAST_PLAIN = 1, ROUNDTRIM_FAST_SAMPLING = 2 };
extern uint8_t roundtrim_fast_glibc __attribute__((visibility("hidden")));
extern uint8_t roundtrim_fast_other __attribute__((visibility("hidden")));
/* Set once the sampler's tables exist (never cleared): resume then picks the sampling mode. */
extern bool roundtrim_sampling_on __attribute__((visibility("hidden")));
/* Set once the bootstrap pool handed out a block (in practice never: dlsym's lookups of the
 * allocator allocate nothing when they succeed). The fast paths then stay off for good, so that
 * free need not test every block against the pool. */
extern bool roundtrim_bootstrap_used __attribute__((visibility("hidden")));

struct roundtrim_fast_calls {
    void *(*malloc)(size_t);
    void (*free)(void *);
};
extern struct roundtrim_fast_calls roundtrim_fast_next __attribute__((visibility("hidden")));
/* By mode; [ROUNDTRIM_FAST_PLAIN] is the allocator's own once it is known; the off and sampling
 * entries are the hooks' (roundtrim_alloc_hooks_install). */
extern struct roundtrim_fast_calls roundtrim_fast_modes[3] __attribute__((visibility("hidden")));

#ifdef ROUNDTRIM_DEBUG
/* Writes the rule broken, where, and aborts (async-signal-safe: a debug build only). */
void roundtrim_fast_rule_broken(const char *rule, const char *file, int line)
    __attribute__((noreturn, visibility("hidden")));
#define ROUNDTRIM_FAST_RULE(cond)                                                                  \
    ((cond) ? (void)0 : roundtrim_fast_rule_broken(#cond, __FILE__, __LINE__))
#else
#define ROUNDTRIM_FAST_RULE(cond) ((void)0)
#endif

/* The rules of the table that hold at any instant, whatever transition another thread is in
 * the middle of. */
static inline void roundtrim_fast_modes_check(void)
{
#ifdef ROUNDTRIM_DEBUG
    uint8_t g = __atomic_load_n(&roundtrim_fast_glibc, __ATOMIC_SEQ_CST);
    uint8_t o = __atomic_load_n(&roundtrim_fast_other, __ATOMIC_SEQ_CST);
    bool glibc = __atomic_load_n(&roundtrim_glibc_sizes, __ATOMIC_RELAXED);
    ROUNDTRIM_FAST_RULE(g <= ROUNDTRIM_FAST_SAMPLING && o <= ROUNDTRIM_FAST_SAMPLING);
    ROUNDTRIM_FAST_RULE(g == ROUNDTRIM_FAST_OFF || o == ROUNDTRIM_FAST_OFF);
    ROUNDTRIM_FAST_RULE(g == ROUNDTRIM_FAST_OFF || glibc);
    ROUNDTRIM_FAST_RULE(o == ROUNDTRIM_FAST_OFF || !glibc);
    ROUNDTRIM_FAST_RULE((g != ROUNDTRIM_FAST_SAMPLING && o != ROUNDTRIM_FAST_SAMPLING) ||
                        __atomic_load_n(&roundtrim_sampling_on, __ATOMIC_ACQUIRE));
#endif
}

static inline void roundtrim_fast_next_set(int mode)
{
    ROUNDTRIM_FAST_RULE(mode >= ROUNDTRIM_FAST_OFF && mode <= ROUNDTRIM_FAST_SAMPLING);
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
    roundtrim_fast_modes_check();
}

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
    roundtrim_fast_modes_check();
}

#endif
