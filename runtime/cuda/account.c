/* Device-memory accounting fed by shim/cuda_hooks.c, on the application threads that call the
 * driver.
 *
 * Live blocks sit in the block map (runtime/cuda/block_map.c), which grows with mmap: the hooks
 * must not add malloc traffic. One short mutex guards the map, the counters and the created
 * pools; it is never held across a driver call. The map has three key spaces: device (and pinned
 * host) addresses, cuMemCreate handles, and the virtual address ranges those handles are mapped
 * at (so that a handle released while still mapped is counted as freed when its last mapping
 * goes, as the driver frees it then). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/account.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "runtime/core/settings.h"
#include "runtime/cuda/block_map.h"

#define MAX_POOLS 256 /* created pools tracked; more are simply not trimmed */

/* Key spaces and states of an entry beyond the public flags. */
#define KEY_MAPPING 4u  /* a mapped range: key is its virtual address, link its handle */
#define RELEASED    8u  /* a handle the program released while mapped: live until unmapped */
#define RELEASING   16u /* a mapped handle whose cuMemRelease is in flight */

_Static_assert((ROUNDTRIM_CUDA_HANDLE | KEY_MAPPING) == ROUNDTRIM_CUDA_MAP_KEY_SPACE,
               "the block map's key spaces are handles and mappings");
_Static_assert(((ROUNDTRIM_CUDA_HOST | RELEASED | RELEASING) & ROUNDTRIM_CUDA_MAP_KEY_SPACE) == 0,
               "states are not key spaces");

typedef struct roundtrim_cuda_map_entry slot_t;

/* Per class of memory: [0] device, [1] pinned host. Cumulative since the process started (or
 * forked), written under st.lock with atomic stores and read without it: a round boundary, in a
 * signal handler too, takes them with plain loads (roundtrim_cuda_counts_snapshot). The peak is
 * the highest live since the last snapshot: the snapshot swaps it for the live bytes. */
struct class_counters {
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes;
    uint64_t live_bytes, peak_bytes;
};

struct created_pool {
    uintptr_t handle; /* 0: free entry */
    int device;
    bool host;
    bool dying;    /* being destroyed: no new trim may start on it */
    unsigned busy; /* trims in flight */
};

static struct {
    pthread_mutex_t lock;
    struct roundtrim_cuda_map map;
    struct class_counters cls[2];
    struct created_pool pools[MAX_POOLS];
} st = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool seen;
static uint64_t devices_used;  /* bit per device ordinal */
static uint64_t devices_async; /* devices with stream-ordered allocations */
static int captures;

/* ---- the map and the counters (caller holds st.lock) ---- */

static slot_t *map_find(uint64_t key, unsigned flags)
{
    return roundtrim_cuda_map_find(&st.map, key, flags);
}

/* Inlined: it is half of every free's cost. */
static inline __attribute__((always_inline)) void map_remove(slot_t *s)
{
    roundtrim_cuda_map_remove(&st.map, s);
}

/* Adds e when there is room; false when the memory for the map cannot be had. */
static inline __attribute__((always_inline)) bool map_add(const slot_t *e)
{
    if (!roundtrim_cuda_map_reserve(&st.map))
        return false;
    roundtrim_cuda_map_put(&st.map, e);
    return true;
}

static struct class_counters *class_of(unsigned flags)
{
    return &st.cls[(flags & ROUNDTRIM_CUDA_HOST) ? 1 : 0];
}

/* Counter updates: under st.lock, but stored atomically for the lock-free snapshot. */
static void counter_add(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* The snapshot may swap the peak at any moment (it takes no lock): raise it with a CAS. */
static void peak_raise(struct class_counters *c, uint64_t live)
{
    uint64_t peak = __atomic_load_n(&c->peak_bytes, __ATOMIC_RELAXED);
    while (live > peak && !__atomic_compare_exchange_n(&c->peak_bytes, &peak, live, true,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void live_add(struct class_counters *c, uint64_t size)
{
    uint64_t live = __atomic_load_n(&c->live_bytes, __ATOMIC_RELAXED) + size;
    __atomic_store_n(&c->live_bytes, live, __ATOMIC_RELAXED);
    peak_raise(c, live);
}

static void live_sub(struct class_counters *c, uint64_t size)
{
    uint64_t live = __atomic_load_n(&c->live_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&c->live_bytes, live >= size ? live - size : 0, __ATOMIC_RELAXED);
}

/* ---- what the hooks report ---- */

void roundtrim_cuda_mark_seen(void)
{
    if (!__atomic_load_n(&seen, __ATOMIC_RELAXED))
        __atomic_store_n(&seen, true, __ATOMIC_RELAXED);
}

static void device_bit_set(uint64_t *set, uint64_t bit)
{
    if (!(__atomic_load_n(set, __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(set, bit, __ATOMIC_RELAXED);
}

void roundtrim_cuda_device_note(int device)
{
    if (device >= 0 && device < ROUNDTRIM_CUDA_MAX_DEVICES)
        device_bit_set(&devices_used, 1ull << device);
}

void roundtrim_cuda_async_device_note(int device)
{
    if (device >= 0 && device < ROUNDTRIM_CUDA_MAX_DEVICES) {
        device_bit_set(&devices_used, 1ull << device);
        device_bit_set(&devices_async, 1ull << device);
    }
}

void roundtrim_cuda_alloc_note(uint64_t key, uint64_t size, int device, unsigned flags)
{
    if (!roundtrim_active()) /* disabled, or a secure-exec process: forwarding only */
        return;
    slot_t e = {
        .key = key, .size = size, .link = 0, .device = device, .flags = (uint8_t)flags, .used = 1};
    pthread_mutex_lock(&st.lock);
    struct class_counters *c = class_of(flags);
    counter_add(&c->alloc_calls, 1);
    counter_add(&c->alloc_bytes, size);
    slot_t *old = map_find(key, flags);
    if (old) {
        /* Its free went by a path we do not see: the old block is gone, keep the new one. */
        live_sub(class_of(old->flags), old->size);
        *old = e;
        live_add(c, size);
    } else if (map_add(&e)) {
        live_add(c, size);
    } /* else: out of memory for the map; the block is counted but not tracked */
    pthread_mutex_unlock(&st.lock);
}

bool roundtrim_cuda_free_begin(uint64_t key, unsigned flags, struct roundtrim_cuda_block *out)
{
    bool found = false;
    pthread_mutex_lock(&st.lock);
    slot_t *s = map_find(key, flags);
    if (s) {
        *out = (struct roundtrim_cuda_block){s->key, s->size, s->device, s->flags};
        map_remove(s);
        found = true;
    }
    pthread_mutex_unlock(&st.lock);
    return found;
}

void roundtrim_cuda_free_end(const struct roundtrim_cuda_block *b, bool released)
{
    pthread_mutex_lock(&st.lock);
    struct class_counters *c = class_of(b->flags);
    if (released) {
        counter_add(&c->free_calls, 1);
        counter_add(&c->free_bytes, b->size);
        live_sub(c, b->size);
    } else if (!map_find(b->key, b->flags)) {
        slot_t e = {b->key, b->size, 0, b->device, b->flags, 1};
        map_add(&e);
    }
    pthread_mutex_unlock(&st.lock);
}

/* ---- VMM handles and their mappings ---- */

enum { RELEASE_UNTRACKED, RELEASE_TAKEN, RELEASE_MAPPED };

void roundtrim_cuda_release_begin(uint64_t handle, struct roundtrim_cuda_release *r)
{
    r->state = RELEASE_UNTRACKED;
    pthread_mutex_lock(&st.lock);
    slot_t *s = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
    if (s) {
        r->block = (struct roundtrim_cuda_block){s->key, s->size, s->device, s->flags};
        if (s->link == 0) { /* unmapped: leaves the map like any freed block */
            map_remove(s);
            r->state = RELEASE_TAKEN;
        } else { /* mapped: stays, so that unmaps meanwhile still find it */
            s->flags |= RELEASING;
            r->state = RELEASE_MAPPED;
        }
    }
    pthread_mutex_unlock(&st.lock);
}

/* Takes a released handle out of the map once its last mapping is gone; true when it did. */
static bool released_handle_gone(slot_t *h, struct roundtrim_cuda_block *out)
{
    if (!(h->flags & RELEASED) || h->link > 0)
        return false;
    *out = (struct roundtrim_cuda_block){
        h->key, h->size, h->device,
        (uint8_t)(h->flags & (ROUNDTRIM_CUDA_HOST | ROUNDTRIM_CUDA_HANDLE))};
    map_remove(h);
    return true;
}

void roundtrim_cuda_release_end(struct roundtrim_cuda_release *r, bool released)
{
    if (r->state == RELEASE_TAKEN)
        roundtrim_cuda_free_end(&r->block, released);
    if (r->state != RELEASE_MAPPED)
        return;
    struct roundtrim_cuda_block gone;
    bool counted = false;
    pthread_mutex_lock(&st.lock);
    slot_t *h = map_find(r->block.key, ROUNDTRIM_CUDA_HANDLE);
    if (h && (h->flags & RELEASING)) {
        h->flags &= (uint8_t)~RELEASING;
        if (released) {
            h->flags |= RELEASED;
            counted = released_handle_gone(h, &gone);
        }
    }
    pthread_mutex_unlock(&st.lock);
    if (counted)
        roundtrim_cuda_free_end(&gone, true);
}

void roundtrim_cuda_map_note(uint64_t va, uint64_t size, uint64_t handle)
{
    pthread_mutex_lock(&st.lock);
    /* Room first: growing the map moves the handle's entry. */
    if (roundtrim_cuda_map_reserve(&st.map)) {
        slot_t *h = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
        if (h && !map_find(va, KEY_MAPPING)) {
            h->link++;
            slot_t m = {va, size, handle, h->device, KEY_MAPPING, 1};
            roundtrim_cuda_map_put(&st.map, &m);
        }
    }
    pthread_mutex_unlock(&st.lock);
}

/* One mapping at va leaves the map; *next is the address after it (0 when none was there). */
static bool unmap_one(uint64_t va, uint64_t *next, struct roundtrim_cuda_block *gone)
{
    bool counted = false;
    *next = 0;
    pthread_mutex_lock(&st.lock);
    slot_t *m = map_find(va, KEY_MAPPING);
    if (m) {
        uint64_t handle = m->link;
        *next = va + m->size;
        map_remove(m);
        slot_t *h = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
        if (h && h->link > 0) {
            h->link--;
            counted = released_handle_gone(h, gone);
        }
    }
    pthread_mutex_unlock(&st.lock);
    return counted;
}

void roundtrim_cuda_unmap_note(uint64_t va, uint64_t size)
{
    /* The range may cover several consecutive mappings (one cuMemUnmap for a striped range). */
    for (uint64_t at = va, next; at && at < va + size; at = next) {
        struct roundtrim_cuda_block gone;
        if (unmap_one(at, &next, &gone))
            roundtrim_cuda_free_end(&gone, true);
    }
}

/* ---- pools ---- */

void roundtrim_cuda_pool_note(uintptr_t pool, int device, bool host)
{
    if (!pool)
        return;
    pthread_mutex_lock(&st.lock);
    for (int i = 0; i < MAX_POOLS; i++) {
        if (!st.pools[i].handle) {
            st.pools[i] = (struct created_pool){pool, device, host, false, 0};
            break;
        }
    }
    pthread_mutex_unlock(&st.lock);
}

static struct created_pool *pool_find(uintptr_t pool)
{
    for (int i = 0; i < MAX_POOLS; i++)
        if (st.pools[i].handle == pool && pool)
            return &st.pools[i];
    return NULL;
}

bool roundtrim_cuda_pool_lookup(uintptr_t pool, int *device, bool *host)
{
    pthread_mutex_lock(&st.lock);
    struct created_pool *p = pool_find(pool);
    if (p) {
        *device = p->device;
        *host = p->host;
    }
    pthread_mutex_unlock(&st.lock);
    return p != NULL;
}

bool roundtrim_cuda_pool_forget(uintptr_t pool, int *device, bool *host)
{
    pthread_mutex_lock(&st.lock);
    struct created_pool *p = pool_find(pool);
    if (!p) {
        pthread_mutex_unlock(&st.lock);
        return false;
    }
    *device = p->device;
    *host = p->host;
    p->dying = true;
    /* A trim of this pool is a few driver calls long; wait for it without holding the lock. */
    while (p->busy) {
        pthread_mutex_unlock(&st.lock);
        sched_yield();
        pthread_mutex_lock(&st.lock);
    }
    *p = (struct created_pool){0};
    pthread_mutex_unlock(&st.lock);
    return true;
}

uint64_t roundtrim_cuda_pool_devices(bool *host)
{
    uint64_t mask = 0;
    *host = false;
    pthread_mutex_lock(&st.lock);
    for (int i = 0; i < MAX_POOLS; i++) {
        const struct created_pool *p = &st.pools[i];
        if (!p->handle)
            continue;
        if (p->host)
            *host = true;
        else if (p->device >= 0 && p->device < ROUNDTRIM_CUDA_MAX_DEVICES)
            mask |= 1ull << p->device;
    }
    pthread_mutex_unlock(&st.lock);
    return mask;
}

bool roundtrim_cuda_pool_next(int *at, int dev, uintptr_t *pool)
{
    bool found = false;
    pthread_mutex_lock(&st.lock);
    for (int i = *at; i < MAX_POOLS; i++) {
        const struct created_pool *p = &st.pools[i];
        if (p->handle && !p->dying && (p->host ? -1 : p->device) == dev) {
            st.pools[i].busy++;
            *pool = p->handle;
            *at = i;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&st.lock);
    return found;
}

void roundtrim_cuda_pool_done(int at)
{
    pthread_mutex_lock(&st.lock);
    st.pools[at].busy--;
    pthread_mutex_unlock(&st.lock);
}

/* ---- captures ---- */

bool roundtrim_cuda_capture_active(void)
{
    return __atomic_load_n(&captures, __ATOMIC_SEQ_CST) > 0;
}

void roundtrim_cuda_capture_change(int delta)
{
    if (delta > 0) {
        __atomic_fetch_add(&captures, 1, __ATOMIC_SEQ_CST);
        return;
    }
    int n = __atomic_load_n(&captures, __ATOMIC_SEQ_CST);
    while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, true, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST))
        ;
}

/* ---- what the rest reads ---- */

bool roundtrim_cuda_seen(void)
{
    return __atomic_load_n(&seen, __ATOMIC_SEQ_CST);
}

uint64_t roundtrim_cuda_devices_used(void)
{
    return __atomic_load_n(&devices_used, __ATOMIC_SEQ_CST);
}

uint64_t roundtrim_cuda_devices_async(void)
{
    return __atomic_load_n(&devices_async, __ATOMIC_SEQ_CST);
}

static void class_snapshot(struct class_counters *c, struct roundtrim_cuda_class_counts *out)
{
    out->alloc_calls = __atomic_load_n(&c->alloc_calls, __ATOMIC_RELAXED);
    out->alloc_bytes = __atomic_load_n(&c->alloc_bytes, __ATOMIC_RELAXED);
    out->free_calls = __atomic_load_n(&c->free_calls, __ATOMIC_RELAXED);
    out->free_bytes = __atomic_load_n(&c->free_bytes, __ATOMIC_RELAXED);
    out->live_bytes = __atomic_load_n(&c->live_bytes, __ATOMIC_RELAXED);
    /* The next round's peak starts from what is live now. */
    uint64_t peak = __atomic_exchange_n(&c->peak_bytes, out->live_bytes, __ATOMIC_RELAXED);
    out->peak_bytes = peak > out->live_bytes ? peak : out->live_bytes;
}

void roundtrim_cuda_counts_snapshot(struct roundtrim_cuda_counts *out)
{
    out->seen = __atomic_load_n(&seen, __ATOMIC_RELAXED);
    if (!out->seen)
        return;
    class_snapshot(&st.cls[0], &out->device);
    class_snapshot(&st.cls[1], &out->host);
}

uint64_t roundtrim_cuda_device_live(void)
{
    return __atomic_load_n(&st.cls[0].live_bytes, __ATOMIC_RELAXED);
}

void roundtrim_cuda_fork_child(void)
{
    /* Another thread of the parent may have held the lock at fork: start from a fresh one. */
    pthread_mutex_init(&st.lock, NULL);
    roundtrim_cuda_map_reset(&st.map);
    memset(st.cls, 0, sizeof st.cls);
    memset(st.pools, 0, sizeof st.pools);
    __atomic_store_n(&seen, false, __ATOMIC_SEQ_CST);
    __atomic_store_n(&devices_used, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&devices_async, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&captures, 0, __ATOMIC_SEQ_CST);
}
