/* The malloc family as the process sees it: forward to the next allocator, count on this
 * thread's own counters, nothing else. Byte counts are usable sizes, so malloc_bytes - free_bytes
 * is exactly the change in bytes held by live blocks. With jemalloc after roundtrim, a thread
 * whose block reads jemalloc's own counters (see thread_counters.h) only counts the call and
 * copies jemalloc's figure, after forwarding. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "runtime/core/export.h"
#include "runtime/sites/sampler.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/threads/worker_thread.h"
#include "runtime/alloc/next_alloc.h"
#include "runtime/core/real_dlsym.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

static void count_other_block(void *p);

__attribute__((noinline)) static void count_new_block_slow(void *p)
{
    if (likely(p != NULL) && !roundtrim_in_next_alloc) {
        if (likely(roundtrim_glibc_sizes))
            roundtrim_count_block(p, roundtrim_glibc_header_usable_size(p));
        else
            count_other_block(p);
    }
}

/* A block of calloc, posix_memalign, aligned_alloc, memalign (and of malloc's slow path): on a
 * thread on the fast path (glibc's sizes, a block) with sampling off, counted from its header;
 * otherwise as the slow path does. */
static inline void count_new_block(void *p)
{
    struct roundtrim_thread_counters *c = roundtrim_tls_fast;
    if (likely(p != NULL && c != NULL) &&
        likely(!__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_RELAXED))) {
        roundtrim_count_glibc_alloc(c, roundtrim_glibc_header(p));
        return;
    }
    count_new_block_slow(p);
}

/* A block about to be freed or moved: counted, and forgotten when it was sampled. */
static inline void count_gone_block(void *p, size_t bytes)
{
    roundtrim_sample_free_check(p);
    roundtrim_count_free(bytes);
    if (roundtrim_glibc_sizes)
        roundtrim_count_mmapped(roundtrim_thread_block(), roundtrim_glibc_header(p), bytes, true);
}

/* The fast paths below handle the common case inline (a glibc block, a thread already counted,
 * nothing pending) and leave everything else to these, so that they need no stack frame. */
__attribute__((noinline, cold)) static void *malloc_slow(void *p)
{
    count_new_block(p);
    roundtrim_worker_poll();
    return p;
}

static void free_other(void *p, struct roundtrim_thread_counters *c);

__attribute__((noinline, cold)) static void free_slow(void *p)
{
    roundtrim_worker_poll();
    if (p == NULL || roundtrim_bootstrap_owns(p))
        return;
    if (!roundtrim_in_next_alloc && !roundtrim_glibc_sizes) {
        roundtrim_sample_free_check(p);
        free_other(p, roundtrim_thread_block()); /* the block is taken before jemalloc counts */
        return;
    }
    if (!roundtrim_in_next_alloc)
        count_gone_block(p, roundtrim_usable_size(p));
    roundtrim_next.free(p);
}

/* Another allocator than glibc: jemalloc's counters (read after the call), or its
 * malloc_usable_size gives the size (a call, so kept out of the glibc path, which then needs no
 * stack frame). A call that comes back from inside that malloc_usable_size is only forwarded. */
__attribute__((noinline)) static void *malloc_other(void *p, struct roundtrim_thread_counters *c)
{
    if (likely(c->je_allocated != NULL)) {
        roundtrim_je_count_alloc(c);
        return p;
    }
    if (unlikely(roundtrim_in_next_alloc))
        return p;
    size_t n = roundtrim_next_usable_size(p);
    c->malloc_calls++;
    c->malloc_bytes += n;
    return p;
}

__attribute__((noinline)) static void free_by_usable_size(void *p,
                                                          struct roundtrim_thread_counters *c)
{
    if (likely(!roundtrim_in_next_alloc)) {
        size_t n = roundtrim_next_usable_size(p);
        c->free_calls++;
        c->free_bytes += n;
    }
    roundtrim_next.free(p);
}

/* The sampling variants (ROUNDTRIM_SITES) of the glibc fast path: the same counting, the
 * countdown on the bytes counter just updated (one compare with a limit in the same cache line),
 * and in free one filter byte before any lookup. What is rare is a tail call, so that the plain
 * path needs no more registers or stack than without them. */
__attribute__((noinline)) static void *malloc_sample(void *p, size_t bytes,
                                                     struct roundtrim_thread_counters *c)
{
    roundtrim_sample_due(p, bytes, c);
    return p;
}

__attribute__((noinline)) static void free_sampled(void *p, struct roundtrim_thread_counters *c)
{
    roundtrim_sample_freed(p);
    size_t h = roundtrim_glibc_header(p), bytes = roundtrim_glibc_usable_from_header(h);
    c->free_calls++;
    c->free_bytes += bytes;
    roundtrim_count_mmapped(c, h, bytes, true);
    roundtrim_next.free(p);
}

/* Sampling on, and everything else the fast path does not take. In malloc the sampling variant
 * is a call away: inline, it would cost the plain path two register moves. */
__attribute__((noinline)) static void *malloc_modes(void *p, struct roundtrim_thread_counters *c)
{
    if (roundtrim_fast_glibc == ROUNDTRIM_FAST_SAMPLING) {
        size_t h = roundtrim_glibc_header(p), bytes = roundtrim_glibc_usable_from_header(h);
        roundtrim_count_mmapped(c, h, bytes, false);
        c->malloc_calls++;
        uint64_t total = c->malloc_bytes + bytes;
        c->malloc_bytes = total;
        if (likely(total < c->sample_at))
            return p;
        return malloc_sample(p, bytes, c);
    }
    if (roundtrim_fast_other == ROUNDTRIM_FAST_SAMPLING && !roundtrim_in_next_alloc) {
        size_t bytes = roundtrim_next_usable_size(p);
        c->malloc_calls++;
        c->malloc_bytes += bytes;
        roundtrim_sample_countdown(p, bytes, c);
        return p;
    }
    return malloc_slow(p);
}

__attribute__((noinline)) static void free_modes(void *p, struct roundtrim_thread_counters *c)
{
    if (roundtrim_fast_other == ROUNDTRIM_FAST_SAMPLING && !roundtrim_in_next_alloc) {
        if (unlikely(roundtrim_sample_maybe(p)))
            roundtrim_sample_freed(p);
        size_t bytes = roundtrim_next_usable_size(p);
        c->free_calls++;
        c->free_bytes += bytes;
        roundtrim_next.free(p);
        return;
    }
    free_slow(p);
}

/* The usable-size route apart, so that the jemalloc route keeps a minimal frame. */
__attribute__((noinline)) static void free_other(void *p, struct roundtrim_thread_counters *c)
{
    if (unlikely(c->je_deallocated == NULL)) {
        free_by_usable_size(p, c);
        return;
    }
    roundtrim_next.free(p);
    roundtrim_je_count_free(c);
}

/* A block another allocator than glibc handed out. When it is the thread's first, its counters
 * are taken only now: on the jemalloc route they start from jemalloc's figure, which already
 * holds p, so p is added back. */
__attribute__((noinline)) static void count_other_block(void *p)
{
    /* With sampling on, the usable-size route runs (the jemalloc route is not taken then). */
    if (unlikely(__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_RELAXED))) {
        roundtrim_count_block(p, roundtrim_next_usable_size(p));
        return;
    }
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    if (unlikely(c == NULL)) {
        c = roundtrim_thread_register();
        if (c->je_allocated)
            c->je_allocated_off += roundtrim_next_usable_size(p);
    }
    malloc_other(p, c);
}

/* A thread that counts on its block with glibc's sizes in a counting mode goes back to the fast
 * path (see roundtrim_tls_fast). Read after this thread's block is known: whatever the mode is
 * meanwhile, the functions the fast path calls hold it. */
static inline void fast_path_rejoin(void)
{
    if (__atomic_load_n(&roundtrim_fast_glibc, __ATOMIC_RELAXED) != ROUNDTRIM_FAST_OFF) {
        ROUNDTRIM_FAST_RULE(roundtrim_glibc_sizes);
        roundtrim_tls_fast = roundtrim_tls_block;
    }
}

/* glibc's counting modes, for a thread not on the fast path: one not counted yet, one a mode's
 * entry sent here (the sampling countdown crossed, the fast path off meanwhile), a failed
 * malloc. The thread goes back to the fast path. */
__attribute__((noinline)) static void *malloc_dispatch(void *p)
{
    roundtrim_fast_modes_check();
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    if (likely(p != NULL && c != NULL)) {
        if (likely(roundtrim_fast_glibc == ROUNDTRIM_FAST_PLAIN))
            roundtrim_count_glibc_alloc(c, roundtrim_glibc_header(p));
        else
            p = malloc_modes(p, c);
    } else {
        p = malloc_slow(p);
    }
    fast_path_rejoin();
    return p;
}

ROUNDTRIM_EXPORT void *malloc(size_t n)
{
    void *p = roundtrim_fast_next.malloc(n);
    struct roundtrim_thread_counters *c = roundtrim_tls_fast;
    if (likely(p != NULL)) {
        if (likely(c != NULL)) {
            ROUNDTRIM_FAST_RULE(c == roundtrim_tls_block && roundtrim_glibc_sizes);
            roundtrim_count_glibc_alloc(c, roundtrim_glibc_header(p));
            return p;
        }
        /* Another allocator than glibc, or the fast path off: these routes need no stack frame. */
        c = roundtrim_tls_block;
        if (likely(c != NULL)) {
            if (roundtrim_fast_other == ROUNDTRIM_FAST_PLAIN)
                return malloc_other(p, c);
            if (roundtrim_fast_glibc == ROUNDTRIM_FAST_OFF)
                return malloc_modes(p, c);
        }
    }
    return malloc_dispatch(p);
}

__attribute__((noinline)) static void free_dispatch(void *p)
{
    roundtrim_fast_modes_check();
    struct roundtrim_thread_counters *c = roundtrim_tls_block;
    /* No pool test here: while the fast path is on, no pool block exists (next_alloc.h). */
    if (likely(p != NULL && c != NULL)) {
        uint8_t mode = __atomic_load_n(&roundtrim_fast_glibc, __ATOMIC_RELAXED);
        if (mode == ROUNDTRIM_FAST_OFF) { /* since free looked */
            free_modes(p, c);
            return;
        }
        roundtrim_tls_fast = c;
        if (likely(mode == ROUNDTRIM_FAST_PLAIN)) {
            roundtrim_count_glibc_free(c, roundtrim_glibc_header(p));
            roundtrim_next.free(p);
            return;
        }
        if (unlikely(roundtrim_sample_maybe(p))) {
            free_sampled(p, c);
            return;
        }
        size_t h = roundtrim_glibc_header(p), bytes = roundtrim_glibc_usable_from_header(h);
        c->free_calls++;
        c->free_bytes += bytes;
        roundtrim_count_mmapped(c, h, bytes, true);
        roundtrim_next.free(p);
        return;
    }
    free_slow(p);
    fast_path_rejoin();
}

ROUNDTRIM_EXPORT void free(void *p)
{
    struct roundtrim_thread_counters *c = roundtrim_tls_fast;
    if (likely(p != NULL)) {
        if (likely(c != NULL)) {
            ROUNDTRIM_FAST_RULE(c == roundtrim_tls_block && roundtrim_glibc_sizes);
            roundtrim_count_glibc_free(c, roundtrim_glibc_header(p));
            roundtrim_fast_next.free(p);
            return;
        }
        c = roundtrim_tls_block;
        if (likely(c != NULL)) {
            if (roundtrim_fast_other == ROUNDTRIM_FAST_PLAIN) {
                free_other(p, c);
                return;
            }
            if (roundtrim_fast_glibc == ROUNDTRIM_FAST_OFF) {
                free_modes(p, c);
                return;
            }
        }
    }
    free_dispatch(p);
}

/* The fast paths' entries for the modes other than plain counting (roundtrim_fast_calls). Off:
 * the thread leaves the fast path (malloc's entry is next_alloc.c's); free, which counted
 * already, does the rest of what the slow path does. */
static void fast_off_free(void *p)
{
    roundtrim_tls_fast = NULL;
    roundtrim_worker_poll();
    roundtrim_sample_free_check(p);
    roundtrim_next.free(p);
}

/* Sampling: the allocation whose bytes reach the thread's countdown goes to the sampling path
 * instead of being counted by the fast path, which then takes the sample as the slow path does. */
static void *fast_sampling_malloc(size_t n)
{
    void *p = roundtrim_next.malloc(n);
    struct roundtrim_thread_counters *c = roundtrim_tls_fast;
    if (likely(p != NULL && c != NULL) &&
        unlikely(c->malloc_bytes + roundtrim_glibc_header_usable_size(p) >= c->sample_at))
        roundtrim_tls_fast = NULL;
    return p;
}

static void fast_sampling_free(void *p)
{
    if (unlikely(roundtrim_sample_maybe(p)))
        roundtrim_sample_freed(p);
    roundtrim_next.free(p);
}

void roundtrim_alloc_hooks_install(void)
{
    __atomic_store_n(&roundtrim_fast_modes[ROUNDTRIM_FAST_OFF].free, fast_off_free,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&roundtrim_fast_modes[ROUNDTRIM_FAST_SAMPLING].malloc, fast_sampling_malloc,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&roundtrim_fast_modes[ROUNDTRIM_FAST_SAMPLING].free, fast_sampling_free,
                     __ATOMIC_RELAXED);
}

void *realloc(void *p, size_t n);
int posix_memalign(void **out, size_t alignment, size_t n);

/* The functions the program's own calls reach first: ours, or those of an allocator preloaded
 * ahead of roundtrim, which then served every block. The variants built on them here
 * (free_sized, reallocarray, valloc, ...) reach roundtrim only where that allocator lacks them
 * (Debian's jemalloc has no pvalloc, reallocarray or free_sized), and must hand its blocks back
 * to it, not to the allocator after roundtrim. Looked up at first use (the loader's tables
 * answer without allocating). */
static void *front_function(void **slot, const char *name, void *ours)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = roundtrim_default_symbol(name);
        if (!fn)
            fn = ours;
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static void front_free(void *p)
{
    static void *slot;
    ((void (*)(void *))front_function(&slot, "free", (void *)free))(p);
}

static void *front_realloc(void *p, size_t n)
{
    static void *slot;
    return ((void *(*)(void *, size_t))front_function(&slot, "realloc", (void *)realloc))(p, n);
}

static int front_posix_memalign(void **out, size_t alignment, size_t n)
{
    static void *slot;
    return ((int (*)(void **, size_t, size_t))front_function(
        &slot, "posix_memalign", (void *)posix_memalign))(out, alignment, n);
}

/* C23 (glibc 2.43): counted as free; the size is a hint no allocator needs. */
ROUNDTRIM_EXPORT void free_sized(void *p, size_t size)
{
    (void)size;
    front_free(p);
}

ROUNDTRIM_EXPORT void free_aligned_sized(void *p, size_t alignment, size_t size)
{
    (void)alignment;
    (void)size;
    front_free(p);
}

ROUNDTRIM_EXPORT void *calloc(size_t n, size_t size)
{
    void *p = roundtrim_next.calloc(n, size);
    count_new_block(p);
    return p;
}

/* jemalloc counts realloc as a free of the old block and an allocation of the new one, as we
 * do; realloc(p, 0) that frees p counts as a free. */
static void *realloc_jemalloc(void *p, size_t n)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    void *q = roundtrim_next.realloc(p, n);
    if (q) {
        roundtrim_je_count_free(c);
        roundtrim_je_count_alloc(c);
    } else if (n == 0) {
        roundtrim_je_count_free(c);
    }
    return q;
}

__attribute__((noinline)) static void *realloc_block(void *p, size_t n)
{
    if (p == NULL)
        return malloc(n);
    if (unlikely(roundtrim_bootstrap_owns(p))) {
        /* A pool block cannot be handed to the allocator: copy it out, keep the pool as is. */
        void *q = malloc(n);
        size_t old = roundtrim_bootstrap_usable_size(p);
        if (q)
            memcpy(q, p, old < n ? old : n);
        return q;
    }
    if (roundtrim_in_next_alloc)
        return roundtrim_next.realloc(p, n);
    if (unlikely(!roundtrim_glibc_sizes) && roundtrim_thread_block()->je_allocated)
        return realloc_jemalloc(p, n);
    size_t old = roundtrim_usable_size(p);
    size_t old_header = roundtrim_glibc_sizes ? roundtrim_glibc_header(p) : 0;
    /* A sampled block is forgotten before the allocator may hand its address to another
     * thread; when realloc fails, the block stays live unsampled. */
    roundtrim_sample_free_check(p);
    void *q = roundtrim_next.realloc(p, n);
    if (q || n == 0) /* glibc's realloc(p, 0) frees p and returns NULL */ {
        roundtrim_count_free(old);
        roundtrim_count_mmapped(roundtrim_thread_block(), old_header, old, true);
    }
    if (q)
        roundtrim_count_block(q, roundtrim_usable_size(q));
    return q;
}

ROUNDTRIM_EXPORT void *realloc(void *p, size_t n)
{
    /* A glibc block on a thread on the fast path, sampling off: the old block's header is read
     * before the call, the counts taken after it (glibc's realloc comes back to no hook). */
    struct roundtrim_thread_counters *c = roundtrim_tls_fast;
    if (likely(p != NULL && c != NULL) &&
        likely(!__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_RELAXED))) {
        size_t old_header = roundtrim_glibc_header(p);
        void *q = roundtrim_next.realloc(p, n);
        if (q || n == 0) /* glibc's realloc(p, 0) frees p and returns NULL */
            roundtrim_count_glibc_free(c, old_header);
        if (q)
            roundtrim_count_glibc_alloc(c, roundtrim_glibc_header(q));
        return q;
    }
    return realloc_block(p, n);
}

ROUNDTRIM_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return front_realloc(p, total);
}

ROUNDTRIM_EXPORT int posix_memalign(void **out, size_t alignment, size_t n)
{
    int rc = roundtrim_next.posix_memalign(out, alignment, n);
    if (rc == 0)
        count_new_block(*out);
    return rc;
}

/* Built on posix_memalign when the next allocator lacks the function: whatever we hand out must
 * come from the allocator that will later free it. */
static void *aligned_block(void *(*fn)(size_t, size_t), size_t alignment, size_t n)
{
    void *p = NULL;
    if (fn) {
        p = fn(alignment, n);
        count_new_block(p);
        return p;
    }
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    int rc = front_posix_memalign(&p, alignment, n);
    if (rc != 0) {
        errno = rc;
        return NULL;
    }
    return p;
}

ROUNDTRIM_EXPORT void *aligned_alloc(size_t alignment, size_t n)
{
    return aligned_block(roundtrim_next.aligned_alloc, alignment, n);
}

ROUNDTRIM_EXPORT void *memalign(size_t alignment, size_t n)
{
    return aligned_block(roundtrim_next.memalign, alignment, n);
}

/* Not every allocator has valloc/pvalloc (Debian's jemalloc lacks pvalloc): forwarding them
 * "next" could reach glibc while jemalloc later frees the block. Build them on posix_memalign. */
ROUNDTRIM_EXPORT void *valloc(size_t n)
{
    return aligned_block(NULL, (size_t)sysconf(_SC_PAGESIZE), n);
}

ROUNDTRIM_EXPORT void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded;
    if (__builtin_add_overflow(n, page - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(page - 1);
    return aligned_block(NULL, page, rounded ? rounded : page);
}

ROUNDTRIM_EXPORT size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (unlikely(roundtrim_bootstrap_owns(p)))
        return roundtrim_bootstrap_usable_size(p);
    return roundtrim_next.malloc_usable_size(p);
}
