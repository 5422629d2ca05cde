/* The map of live device blocks (runtime/cuda/block_map.c) and, through the accounting's locked
 * API (runtime/cuda/account.c), its use from many threads at once.
 *
 * The map itself is not thread-safe by contract: account.c serialises every call under its one
 * lock. So the map is tested alone single-threaded (insert, find, remove, growth, collisions and
 * wrap-around, the table at its load limit and out of memory, key spaces, removal then reinsert,
 * a random churn against a plain model), and the concurrent stress goes through the accounting as
 * the driver hooks call it, with the round boundary's lock-free snapshot reading meanwhile: under
 * ThreadSanitizer (make cuda-tsan) a race there is a report, and the totals must come out exact.
 *
 * The out-of-memory case needs a failing mmap: the suite is linked with --wrap=mmap, and the map's
 * mmap calls fail while the test says so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/cuda/account.h"
#include "runtime/cuda/block_map.h"
#include "run_suite.h"

/* ---- a failing mmap on demand ---- */

/* The suite is linked with --wrap=mmap: the calls of the objects linked into it (the map's)
 * come here, __real_mmap is the mmap they would have called (the sanitizer's, or libc's). */
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static int mmap_failures; /* the next this many mmap calls fail */

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (mmap_failures > 0) {
        mmap_failures--;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return __real_mmap(addr, len, prot, flags, fd, off);
}

/* ---- the map alone ---- */

#define HANDLE  ROUNDTRIM_CUDA_HANDLE /* key space 2 */
#define MAPPING 4u                    /* key space 4, as account.c uses it */
#define HOST    ROUNDTRIM_CUDA_HOST   /* not a key space */

typedef struct roundtrim_cuda_map_entry entry_t;

static entry_t entry(uint64_t key, uint64_t size, unsigned flags)
{
    return (entry_t){.key = key,
                     .size = size,
                     .link = key ^ size,
                     .device = (int32_t)(size % 7),
                     .flags = (uint8_t)flags};
}

static bool insert(struct roundtrim_cuda_map *m, uint64_t key, uint64_t size, unsigned flags)
{
    if (!roundtrim_cuda_map_reserve(m))
        return false;
    entry_t e = entry(key, size, flags);
    roundtrim_cuda_map_put(m, &e);
    return true;
}

static void remove_key(struct roundtrim_cuda_map *m, uint64_t key, unsigned flags)
{
    entry_t *s = roundtrim_cuda_map_find(m, key, flags);
    ck_assert_ptr_nonnull(s);
    roundtrim_cuda_map_remove(m, s);
}

/* The entry of key is there with everything insert gave it. */
static void assert_holds(const struct roundtrim_cuda_map *m, uint64_t key, uint64_t size,
                         unsigned flags)
{
    entry_t *s = roundtrim_cuda_map_find(m, key, flags);
    ck_assert_msg(s != NULL, "key %#llx (flags %u) lost", (unsigned long long)key, flags);
    ck_assert_uint_eq(s->key, key);
    ck_assert_uint_eq(s->size, size);
    ck_assert_uint_eq(s->link, key ^ size);
    ck_assert_int_eq(s->device, (int32_t)(size % 7));
    ck_assert_uint_eq(s->flags, flags);
    ck_assert_uint_eq(s->used, 1);
}

/* Every slot in use is found from its home without crossing a free slot, and count is right. */
static void assert_consistent(const struct roundtrim_cuda_map *m)
{
    size_t used = 0;
    for (size_t i = 0; i < m->cap; i++) {
        const entry_t *s = &m->slots[i];
        if (!s->used)
            continue;
        used++;
        for (size_t j = roundtrim_cuda_map_home(s->key, s->flags, m->cap); j != i;
             j = (j + 1) & (m->cap - 1))
            ck_assert_msg(m->slots[j].used, "slot %zu unreachable from its home", i);
        ck_assert_ptr_eq(roundtrim_cuda_map_find(m, s->key, s->flags), s);
    }
    ck_assert_uint_eq(used, m->count);
    ck_assert_uint_le(m->count * 8, m->cap * 5);
}

START_TEST(empty_map_finds_nothing)
{
    struct roundtrim_cuda_map m = {0};
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, 0, 0));
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, 0x7f0000000000, HANDLE));
    ck_assert_uint_eq(m.cap, 0);
    roundtrim_cuda_map_reset(&m); /* nothing to free */
    ck_assert_ptr_null(m.slots);
}
END_TEST

START_TEST(insert_find_remove)
{
    struct roundtrim_cuda_map m = {0};
    ck_assert(insert(&m, 0x7f0000200000, 4096, 0));
    ck_assert_uint_eq(m.cap, ROUNDTRIM_CUDA_MAP_MIN_SLOTS);
    ck_assert(insert(&m, 0x7f0000400000, 1 << 20, HOST));
    ck_assert(insert(&m, 0, 1, 0)); /* key 0 is a key like any other */
    ck_assert_uint_eq(m.count, 3);
    assert_holds(&m, 0x7f0000200000, 4096, 0);
    assert_holds(&m, 0x7f0000400000, 1 << 20, HOST);
    assert_holds(&m, 0, 1, 0);
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, 0x7f0000600000, 0));
    /* An entry found may be changed in place. */
    roundtrim_cuda_map_find(&m, 0x7f0000200000, 0)->link = 3;
    ck_assert_uint_eq(roundtrim_cuda_map_find(&m, 0x7f0000200000, 0)->link, 3);
    remove_key(&m, 0x7f0000200000, 0);
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, 0x7f0000200000, 0));
    assert_holds(&m, 0x7f0000400000, 1 << 20, HOST);
    remove_key(&m, 0, 0);
    remove_key(&m, 0x7f0000400000, 0);
    ck_assert_uint_eq(m.count, 0);
    assert_consistent(&m);
    roundtrim_cuda_map_reset(&m);
    ck_assert_ptr_null(m.slots);
    ck_assert_uint_eq(m.cap, 0);
    ck_assert_uint_eq(m.count, 0);
    /* Usable again after a reset. */
    ck_assert(insert(&m, 42, 42, 0));
    assert_holds(&m, 42, 42, 0);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* The table doubles exactly when one more entry would pass a load of 5/8, keeping every entry. */
START_TEST(growth_keeps_every_entry)
{
    struct roundtrim_cuda_map m = {0};
    const uint64_t n = 20000;
    size_t cap = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t before = m.cap;
        ck_assert(insert(&m, 0x7f0000000000 + (i << 21), i + 1, 0)); /* 2 MiB aligned */
        if (m.cap != before) {
            ck_assert_uint_eq(m.cap, before ? before * 2 : ROUNDTRIM_CUDA_MAP_MIN_SLOTS);
            /* Grown by the insert that would have passed the load limit, and no earlier one. */
            ck_assert_uint_gt((i + 1) * 8, before * 5);
            ck_assert_uint_le(i * 8, before * 5);
            cap = m.cap;
        }
    }
    ck_assert_uint_eq(m.count, n);
    ck_assert_uint_eq(cap, 32768); /* 20000 entries need 2^15 slots at 5/8 */
    ck_assert_uint_eq(m.cap & (m.cap - 1), 0);
    for (uint64_t i = 0; i < n; i++)
        assert_holds(&m, 0x7f0000000000 + (i << 21), i + 1, 0);
    assert_consistent(&m);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* Keys of the same home slot, some of them at the table's last slot so that their probe wraps to
 * slot 0; removals from the middle of such chains keep the rest reachable. */
START_TEST(collisions_and_wrap_around)
{
    struct roundtrim_cuda_map m = {0};
    const size_t cap = ROUNDTRIM_CUDA_MAP_MIN_SLOTS;
    uint64_t mid[12], last[12];
    size_t nmid = 0, nlast = 0;
    size_t home_mid = roundtrim_cuda_map_home(0x1000, 0, cap);
    for (uint64_t k = 0x1000; nmid < 12 || nlast < 12; k += 0x1000) {
        size_t h = roundtrim_cuda_map_home(k, 0, cap);
        if (h == home_mid && nmid < 12)
            mid[nmid++] = k;
        else if (h == cap - 1 && nlast < 12)
            last[nlast++] = k;
    }
    for (size_t i = 0; i < 12; i++) {
        ck_assert(insert(&m, mid[i], i + 1, 0));
        ck_assert(insert(&m, last[i], i + 100, 0));
    }
    ck_assert_uint_eq(m.cap, cap);
    ck_assert(m.slots[0].used); /* the chain at the last slot went on at slot 0 */
    assert_consistent(&m);
    /* Out of the middle, the head and the tail of both chains. */
    const size_t order[] = {5, 0, 11, 6, 1, 10};
    for (size_t j = 0; j < sizeof order / sizeof order[0]; j++) {
        remove_key(&m, mid[order[j]], 0);
        remove_key(&m, last[order[j]], 0);
        assert_consistent(&m);
    }
    for (size_t i = 0; i < 12; i++) {
        bool gone = false;
        for (size_t j = 0; j < sizeof order / sizeof order[0]; j++)
            gone |= order[j] == i;
        if (gone) {
            ck_assert_ptr_null(roundtrim_cuda_map_find(&m, mid[i], 0));
            ck_assert_ptr_null(roundtrim_cuda_map_find(&m, last[i], 0));
        } else {
            assert_holds(&m, mid[i], i + 1, 0);
            assert_holds(&m, last[i], i + 100, 0);
        }
    }
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* At its load limit the table takes no more without growing, and when it cannot grow it says so
 * and keeps every entry; it grows again once memory is back. */
START_TEST(full_table_without_memory)
{
    struct roundtrim_cuda_map m = {0};
    const size_t cap = ROUNDTRIM_CUDA_MAP_MIN_SLOTS, limit = cap * 5 / 8;
    mmap_failures = 1;
    ck_assert(!insert(&m, 1, 1, 0)); /* not even the first table */
    ck_assert_ptr_null(m.slots);
    ck_assert_uint_eq(m.count, 0);
    for (uint64_t i = 0; i < limit; i++)
        ck_assert(insert(&m, (i + 1) << 12, i, 0));
    ck_assert_uint_eq(m.cap, cap);
    ck_assert_uint_eq(m.count, limit);
    entry_t *before = m.slots;
    mmap_failures = 1;
    ck_assert(!roundtrim_cuda_map_reserve(&m));
    ck_assert_ptr_eq(m.slots, before);
    ck_assert_uint_eq(m.cap, cap);
    for (uint64_t i = 0; i < limit; i++)
        assert_holds(&m, (i + 1) << 12, i, 0);
    /* A removal makes room again without growing. */
    remove_key(&m, 1 << 12, 0);
    mmap_failures = 1;
    ck_assert(insert(&m, 1 << 12, 0, 0));
    ck_assert_uint_eq(mmap_failures, 1); /* no mmap was asked for */
    mmap_failures = 0;
    ck_assert(insert(&m, (limit + 1) << 12, limit, 0));
    ck_assert_uint_eq(m.cap, cap * 2);
    for (uint64_t i = 0; i <= limit; i++)
        assert_holds(&m, (i + 1) << 12, i, 0);
    assert_consistent(&m);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* The same key in the three key spaces is three entries; the other flag bits play no part in
 * finding one. */
START_TEST(keys_with_different_flags)
{
    struct roundtrim_cuda_map m = {0};
    const uint64_t key = 0x7f1234600000;
    ck_assert(insert(&m, key, 1, 0));
    ck_assert(insert(&m, key, 2, HANDLE));
    ck_assert(insert(&m, key, 3, MAPPING));
    ck_assert_uint_eq(m.count, 3);
    assert_holds(&m, key, 1, 0);
    assert_holds(&m, key, 2, HANDLE);
    assert_holds(&m, key, 3, MAPPING);
    /* Pinned host memory, and the accounting's states (8, 16), share the address space. */
    ck_assert_ptr_eq(roundtrim_cuda_map_find(&m, key, HOST), roundtrim_cuda_map_find(&m, key, 0));
    ck_assert_ptr_eq(roundtrim_cuda_map_find(&m, key, HANDLE | HOST | 8 | 16),
                     roundtrim_cuda_map_find(&m, key, HANDLE));
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, key, HANDLE | MAPPING));
    roundtrim_cuda_map_find(&m, key, HANDLE)->flags |= 8; /* a state set in place */
    ck_assert_ptr_nonnull(roundtrim_cuda_map_find(&m, key, HANDLE));
    remove_key(&m, key, HANDLE);
    ck_assert_ptr_null(roundtrim_cuda_map_find(&m, key, HANDLE));
    assert_holds(&m, key, 1, 0);
    assert_holds(&m, key, 3, MAPPING);
    /* Many keys in all three spaces, all distinct entries. */
    for (uint64_t i = 1; i <= 500; i++) {
        ck_assert(insert(&m, i << 21, i, 0));
        ck_assert(insert(&m, i << 21, i + 1, HANDLE));
        ck_assert(insert(&m, i << 21, i + 2, MAPPING));
    }
    for (uint64_t i = 1; i <= 500; i++) {
        assert_holds(&m, i << 21, i, 0);
        assert_holds(&m, i << 21, i + 1, HANDLE);
        assert_holds(&m, i << 21, i + 2, MAPPING);
    }
    assert_consistent(&m);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

START_TEST(removal_then_reinsert)
{
    struct roundtrim_cuda_map m = {0};
    for (uint64_t i = 0; i < 300; i++)
        ck_assert(insert(&m, 0x500000000 + i * 0x200000, i, 0));
    for (int round = 0; round < 50; round++) {
        for (uint64_t i = round % 3; i < 300; i += 3)
            remove_key(&m, 0x500000000 + i * 0x200000, 0);
        ck_assert_uint_eq(m.count, 200);
        for (uint64_t i = round % 3; i < 300; i += 3)
            ck_assert(insert(&m, 0x500000000 + i * 0x200000, i + 1000 * (uint64_t)round, 0));
        ck_assert_uint_eq(m.count, 300);
        assert_consistent(&m);
    }
    ck_assert_uint_eq(m.cap, ROUNDTRIM_CUDA_MAP_MIN_SLOTS); /* churn alone never grows it */
    assert_holds(&m, 0x500000000 + 1 * 0x200000, 1 + 1000 * 49, 0);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* Random inserts and removals against a plain array of what must be there. */
START_TEST(random_churn_matches_a_model)
{
    enum { KEYS = 4096 };
    static bool present[KEYS][3];
    static const unsigned spaces[3] = {0, HANDLE, MAPPING};
    struct roundtrim_cuda_map m = {0};
    uint64_t state = 0x9e3779b97f4a7c15ull;
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        unsigned k = (unsigned)(state % KEYS), sp = (unsigned)((state >> 20) % 3);
        uint64_t key = (uint64_t)k << 21;
        if (present[k][sp]) {
            remove_key(&m, key, spaces[sp]);
            present[k][sp] = false;
            live--;
        } else {
            ck_assert_ptr_null(roundtrim_cuda_map_find(&m, key, spaces[sp]));
            ck_assert(insert(&m, key, k + sp, spaces[sp]));
            present[k][sp] = true;
            live++;
        }
        ck_assert_uint_eq(m.count, live);
        if (step % 20000 == 0)
            assert_consistent(&m);
    }
    for (unsigned k = 0; k < KEYS; k++)
        for (unsigned sp = 0; sp < 3; sp++) {
            if (present[k][sp])
                assert_holds(&m, (uint64_t)k << 21, k + sp, spaces[sp]);
            else
                ck_assert_ptr_null(roundtrim_cuda_map_find(&m, (uint64_t)k << 21, spaces[sp]));
        }
    assert_consistent(&m);
    roundtrim_cuda_map_reset(&m);
}
END_TEST

/* ---- many threads through the accounting's locked API ---- */

enum { THREADS = 4, POOLS = 8 };

static int iterations(void)
{
    const char *s = getenv("CUDA_MAP_STRESS_ITERATIONS");
    return s && atoi(s) > 0 ? atoi(s) : 20000;
}

/* What one hook thread did, per class of memory: [0] device, [1] pinned host. */
struct worker {
    pthread_t tid;
    unsigned id;
    struct roundtrim_cuda_class_counts cls[2];
};

static void count(struct worker *w, bool host, bool alloc, uint64_t size)
{
    struct roundtrim_cuda_class_counts *c = &w->cls[host];
    if (alloc) {
        c->alloc_calls++;
        c->alloc_bytes += size;
    } else {
        c->free_calls++;
        c->free_bytes += size;
    }
}

/* Keys of thread id: 2 MiB aligned device addresses, host addresses and handles, never shared. */
static uint64_t key_of(unsigned id, uint64_t i, unsigned kind)
{
    return ((uint64_t)(id + 1) << 44) | ((uint64_t)kind << 40) | (i << 21);
}

/* Block i of a thread: its size, and whether it is pinned host memory. */
static uint64_t block_size(int i)
{
    return 4096u * (uint64_t)(1 + i % 64);
}

static bool block_host(int i)
{
    return i % 5 == 0;
}

/* Frees block i of w as a free hook does; the driver refuses the first try when refuse. */
static void block_free(struct worker *w, int i, bool refuse)
{
    struct roundtrim_cuda_block b;
    uint64_t key = key_of(w->id, (uint64_t)i, block_host(i));
    for (bool released = !refuse;; released = true) {
        ck_assert(roundtrim_cuda_free_begin(key, 0, &b));
        ck_assert_uint_eq(b.size, block_size(i));
        roundtrim_cuda_free_end(&b, released);
        if (released)
            break;
    }
    ck_assert(!roundtrim_cuda_free_begin(key, 0, &b)); /* gone for good */
    count(w, block_host(i), false, block_size(i));
}

static void *hook_thread(void *arg)
{
    struct worker *w = arg;
    enum { WINDOW = 96 }; /* live blocks per thread: the map grows and shrinks under load */
    const int n = iterations();
    for (int i = 0; i < n; i++) {
        bool host = block_host(i);
        roundtrim_cuda_mark_seen();
        roundtrim_cuda_alloc_note(key_of(w->id, (uint64_t)i, host), block_size(i), (int)w->id,
                                  host ? ROUNDTRIM_CUDA_HOST : 0);
        roundtrim_cuda_device_note((int)w->id);
        count(w, host, true, block_size(i));
        if (i >= WINDOW) /* an older block's free, refused by the driver now and then */
            block_free(w, i - WINDOW, (i - WINDOW) % 7 == 0);
        if (i % 16 == 0) { /* a VMM handle released while mapped, freed at its last unmap */
            uint64_t h = key_of(w->id, (uint64_t)i, 2), va = key_of(w->id, (uint64_t)i, 3);
            struct roundtrim_cuda_release r;
            roundtrim_cuda_alloc_note(h, 2u << 20, (int)w->id, ROUNDTRIM_CUDA_HANDLE);
            roundtrim_cuda_map_note(va, 1u << 20, h);
            roundtrim_cuda_map_note(va + (1u << 20), 1u << 20, h);
            roundtrim_cuda_release_begin(h, &r);
            roundtrim_cuda_release_end(&r, true);
            roundtrim_cuda_unmap_note(va, 2u << 20); /* both mappings at once */
            count(w, false, true, 2u << 20);
            count(w, false, false, 2u << 20);
        }
        if (i % 64 == 0) {
            roundtrim_cuda_capture_change(+1);
            roundtrim_cuda_capture_change(-1);
        }
    }
    for (int j = n > WINDOW ? n - WINDOW : 0; j < n; j++) /* the last window's blocks */
        block_free(w, j, false);
    return NULL;
}

static atomic_bool stop;

/* The round boundary: lock-free snapshots, whose counters only ever grow. */
static void *snapshot_thread(void *arg)
{
    (void)arg;
    struct roundtrim_cuda_counts prev = {0}, now;
    while (!atomic_load(&stop)) {
        roundtrim_cuda_counts_snapshot(&now);
        if (!now.seen)
            continue;
        ck_assert_uint_ge(now.device.alloc_calls, prev.device.alloc_calls);
        ck_assert_uint_ge(now.device.free_bytes, prev.device.free_bytes);
        ck_assert_uint_ge(now.host.alloc_bytes, prev.host.alloc_bytes);
        ck_assert_uint_ge(now.host.free_calls, prev.host.free_calls);
        ck_assert_uint_ge(now.device.peak_bytes, now.device.live_bytes);
        prev = now;
        (void)roundtrim_cuda_capture_active();
        (void)roundtrim_cuda_devices_used();
    }
    return NULL;
}

/* Created pools, noted and destroyed while the trim walks them: a destroy never returns while a
 * walk holds its pool, so a pool the walk holds is always alive. alive[] is plain memory on
 * purpose: the lock's ordering is what keeps the walk's reads from racing with the destroyer's
 * writes, and ThreadSanitizer checks exactly that. */
static int alive[POOLS + 1];

static void *pool_owner_thread(void *arg)
{
    (void)arg;
    for (int i = 0; !atomic_load(&stop); i++) {
        uintptr_t pool = 1 + (uintptr_t)(i % POOLS);
        int device;
        bool host;
        alive[pool] = 1;
        roundtrim_cuda_pool_note(pool, (int)(pool % 2), pool == POOLS);
        ck_assert(roundtrim_cuda_pool_lookup(pool, &device, &host));
        ck_assert(roundtrim_cuda_pool_forget(pool, &device, &host));
        ck_assert_int_eq(device, (int)(pool % 2));
        alive[pool] = 0;
    }
    return NULL;
}

static void *pool_walk_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        bool host;
        (void)roundtrim_cuda_pool_devices(&host);
        for (int dev = -1; dev <= 1; dev++) {
            uintptr_t pool;
            for (int at = 0; roundtrim_cuda_pool_next(&at, dev, &pool); at++) {
                ck_assert_int_eq(alive[pool], 1);
                roundtrim_cuda_pool_done(at);
            }
        }
    }
    return NULL;
}

START_TEST(concurrent_hooks_count_exactly)
{
    struct worker w[THREADS];
    pthread_t snap, owner, walker;
    roundtrim_cuda_fork_child(); /* a fresh state, should the tests share a process */
    atomic_store(&stop, false);
    ck_assert_int_eq(pthread_create(&snap, NULL, snapshot_thread, NULL), 0);
    ck_assert_int_eq(pthread_create(&owner, NULL, pool_owner_thread, NULL), 0);
    ck_assert_int_eq(pthread_create(&walker, NULL, pool_walk_thread, NULL), 0);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.id = i};
        ck_assert_int_eq(pthread_create(&w[i].tid, NULL, hook_thread, &w[i]), 0);
    }
    struct roundtrim_cuda_class_counts sum[2] = {{0}};
    for (unsigned i = 0; i < THREADS; i++) {
        ck_assert_int_eq(pthread_join(w[i].tid, NULL), 0);
        for (int k = 0; k < 2; k++) {
            sum[k].alloc_calls += w[i].cls[k].alloc_calls;
            sum[k].alloc_bytes += w[i].cls[k].alloc_bytes;
            sum[k].free_calls += w[i].cls[k].free_calls;
            sum[k].free_bytes += w[i].cls[k].free_bytes;
        }
    }
    atomic_store(&stop, true);
    ck_assert_int_eq(pthread_join(snap, NULL), 0);
    ck_assert_int_eq(pthread_join(owner, NULL), 0);
    ck_assert_int_eq(pthread_join(walker, NULL), 0);

    struct roundtrim_cuda_counts c;
    roundtrim_cuda_counts_snapshot(&c);
    ck_assert(c.seen);
    const struct roundtrim_cuda_class_counts *got[2] = {&c.device, &c.host};
    for (int k = 0; k < 2; k++) {
        ck_assert_uint_gt(sum[k].alloc_calls, 0);
        ck_assert_uint_eq(got[k]->alloc_calls, sum[k].alloc_calls);
        ck_assert_uint_eq(got[k]->alloc_bytes, sum[k].alloc_bytes);
        ck_assert_uint_eq(got[k]->free_calls, sum[k].free_calls);
        ck_assert_uint_eq(got[k]->free_bytes, sum[k].free_bytes);
        ck_assert_uint_eq(got[k]->live_bytes, 0);
    }
    ck_assert(!roundtrim_cuda_capture_active());
    ck_assert_uint_eq(roundtrim_cuda_devices_used(), (1u << THREADS) - 1);
    bool host;
    ck_assert_uint_eq(roundtrim_cuda_pool_devices(&host), 0); /* every pool destroyed */
    ck_assert(!host);
}
END_TEST

/* The accounting over the map, one thread: what the stress relies on, checked where a failure is
 * easy to read. */
START_TEST(accounting_keeps_blocks_in_the_map)
{
    struct roundtrim_cuda_block b;
    struct roundtrim_cuda_counts c;
    roundtrim_cuda_fork_child(); /* a fresh state, should the tests share a process */
    roundtrim_cuda_mark_seen();
    roundtrim_cuda_alloc_note(0x1000000, 100, 0, 0);
    roundtrim_cuda_alloc_note(0x1000000, 50, 0, ROUNDTRIM_CUDA_HANDLE); /* another key space */
    ck_assert(roundtrim_cuda_free_begin(0x1000000, 0, &b));
    ck_assert_uint_eq(b.size, 100);
    ck_assert(!roundtrim_cuda_free_begin(0x1000000, 0, &b)); /* out while the free runs */
    roundtrim_cuda_free_end(&b, false);                      /* refused: back in */
    ck_assert(roundtrim_cuda_free_begin(0x1000000, 0, &b));
    roundtrim_cuda_free_end(&b, true);
    roundtrim_cuda_counts_snapshot(&c);
    ck_assert_uint_eq(c.device.alloc_calls, 2);
    ck_assert_uint_eq(c.device.free_calls, 1);
    ck_assert_uint_eq(c.device.live_bytes, 50);
    ck_assert_uint_eq(c.device.peak_bytes, 150);
    /* Reallocated at a tracked address (its free went unseen): the new size replaces the old. */
    roundtrim_cuda_alloc_note(0x2000000, 10, 0, 0);
    roundtrim_cuda_alloc_note(0x2000000, 30, 0, 0);
    roundtrim_cuda_counts_snapshot(&c);
    ck_assert_uint_eq(c.device.live_bytes, 80);
    ck_assert_uint_eq(c.device.peak_bytes, 80); /* the old 10 leaves before the new 30 counts */
    roundtrim_cuda_fork_child();
    roundtrim_cuda_counts_snapshot(&c);
    ck_assert(!c.seen);
    ck_assert(!roundtrim_cuda_free_begin(0x2000000, 0, &b));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cuda_map");
    TCase *map = tcase_create("map");
    tcase_add_test(map, empty_map_finds_nothing);
    tcase_add_test(map, insert_find_remove);
    tcase_add_test(map, growth_keeps_every_entry);
    tcase_add_test(map, collisions_and_wrap_around);
    tcase_add_test(map, full_table_without_memory);
    tcase_add_test(map, keys_with_different_flags);
    tcase_add_test(map, removal_then_reinsert);
    tcase_add_test(map, random_churn_matches_a_model);
    tcase_set_timeout(map, 120);
    suite_add_tcase(s, map);
    TCase *acc = tcase_create("accounting");
    tcase_add_test(acc, accounting_keeps_blocks_in_the_map);
    tcase_add_test(acc, concurrent_hooks_count_exactly);
    tcase_set_timeout(acc, 300);
    suite_add_tcase(s, acc);
    return run_suite(s);
}
