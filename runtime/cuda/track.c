/* Device-memory accounting fed by shim/cuda_hooks.c, and the release of the driver's pools.
 *
 * Live blocks sit in an open-addressing hash table (linear probing, backward-shift deletion)
 * that grows with mmap: the hooks run on application threads and must not add malloc traffic.
 * One short mutex guards the table and the counters; it is never held across a driver call.
 * The table has three key spaces: device (and pinned host) addresses, cuMemCreate handles, and
 * the virtual address ranges those handles are mapped at (so that a handle released while still
 * mapped is counted as freed when its last mapping goes, as the driver frees it then).
 *
 * Driver calls of roundtrim's own (mem info, synchronize, trim, and the Python helper's
 * torch.cuda.empty_cache through roundtrim_cuda_context_enter) run on roundtrim's threads, each
 * inside the primary context of a device the program itself used, made current for the duration
 * and only when the program keeps it active: a thread with no current context would make the
 * runtime create one on device 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/cuda/account.h"
#include "runtime/cuda/track.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"

#define MAP_MIN_SLOTS 1024u
#define MAX_POOLS     256 /* created pools tracked; more are simply not trimmed */
#define MAX_DEVICES   64  /* device ordinals we keep default pools of */

/* Key spaces and states of a slot beyond the public flags. */
#define KEY_MAPPING 4u  /* a mapped range: key is its virtual address, link its handle */
#define RELEASED    8u  /* a handle the program released while mapped: live until unmapped */
#define RELEASING   16u /* a mapped handle whose cuMemRelease is in flight */
#define KEY_SPACE   (ROUNDTRIM_CUDA_HANDLE | KEY_MAPPING)

struct slot {
    uint64_t key;
    uint64_t size;
    uint64_t link; /* a handle: how many mappings it has; a mapping: its handle */
    int32_t device;
    uint8_t flags;
    uint8_t used;
};

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
    struct slot *slots;
    size_t cap, count; /* cap: power of two, 0 before the first insert */
    struct class_counters cls[2];
    struct created_pool pools[MAX_POOLS];
} st = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_bool seen;
static _Atomic uint64_t devices_used;  /* bit per device ordinal */
static _Atomic uint64_t devices_async; /* devices with stream-ordered allocations */
static atomic_int captures;
static const char *pool_trim_skipped; /* the worker's last trim: why it did not run */

/* ---- the map (caller holds st.lock) ---- */

/* Fibonacci hashing takes the top bits of the product: device addresses have many zero low bits
 * (2 MiB aligned is common), which the low bits of the product would keep. */
static size_t slot_of(uint64_t key, unsigned flags, size_t cap)
{
    uint64_t h = (key ^ ((uint64_t)(flags & KEY_SPACE) * 0x5bd1e995u)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> (64 - __builtin_ctzll(cap)));
}

static bool same_key(const struct slot *s, uint64_t key, unsigned flags)
{
    return s->used && s->key == key && ((s->flags ^ flags) & KEY_SPACE) == 0;
}

static void place(struct slot *slots, size_t cap, const struct slot *e)
{
    size_t i = slot_of(e->key, e->flags, cap);
    while (slots[i].used)
        i = (i + 1) & (cap - 1);
    slots[i] = *e;
}

static bool map_grow(void)
{
    size_t ncap = st.cap ? st.cap * 2 : MAP_MIN_SLOTS;
    struct slot *ns =
        mmap(NULL, ncap * sizeof *ns, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ns == MAP_FAILED)
        return false;
    for (size_t i = 0; i < st.cap; i++)
        if (st.slots[i].used)
            place(ns, ncap, &st.slots[i]);
    if (st.slots)
        munmap(st.slots, st.cap * sizeof *st.slots);
    st.slots = ns;
    st.cap = ncap;
    return true;
}

/* Room for one more slot at a load factor of at most 5/8. */
static inline __attribute__((always_inline)) bool map_has_room(void)
{
    return (st.count + 1) * 8 <= st.cap * 5 || map_grow();
}

static struct slot *map_find(uint64_t key, unsigned flags)
{
    if (!st.cap)
        return NULL;
    for (size_t i = slot_of(key, flags, st.cap);; i = (i + 1) & (st.cap - 1)) {
        if (!st.slots[i].used)
            return NULL;
        if (same_key(&st.slots[i], key, flags))
            return &st.slots[i];
    }
}

/* Backward-shift deletion keeps probe chains intact without tombstones. Inlined: it is half of
 * every free's cost. */
static inline __attribute__((always_inline)) void map_remove(struct slot *s)
{
    size_t cap = st.cap, hole = (size_t)(s - st.slots);
    st.slots[hole].used = 0;
    for (size_t i = (hole + 1) & (cap - 1); st.slots[i].used; i = (i + 1) & (cap - 1)) {
        size_t home = slot_of(st.slots[i].key, st.slots[i].flags, cap);
        /* Move i into the hole when its home is not in the cyclic range (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            st.slots[hole] = st.slots[i];
            st.slots[i].used = 0;
            hole = i;
        }
    }
    st.count--;
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
    if (!atomic_load_explicit(&seen, memory_order_relaxed))
        atomic_store_explicit(&seen, true, memory_order_relaxed);
}

static void device_bit_set(_Atomic uint64_t *set, uint64_t bit)
{
    if (!(atomic_load_explicit(set, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(set, bit, memory_order_relaxed);
}

void roundtrim_cuda_device_note(int device)
{
    if (device >= 0 && device < MAX_DEVICES)
        device_bit_set(&devices_used, 1ull << device);
}

void roundtrim_cuda_async_device_note(int device)
{
    if (device >= 0 && device < MAX_DEVICES) {
        device_bit_set(&devices_used, 1ull << device);
        device_bit_set(&devices_async, 1ull << device);
    }
}

void roundtrim_cuda_alloc_note(uint64_t key, uint64_t size, int device, unsigned flags)
{
    if (!roundtrim_active()) /* disabled, or a secure-exec process: forwarding only */
        return;
    struct slot e = {
        .key = key, .size = size, .link = 0, .device = device, .flags = (uint8_t)flags, .used = 1};
    pthread_mutex_lock(&st.lock);
    struct class_counters *c = class_of(flags);
    counter_add(&c->alloc_calls, 1);
    counter_add(&c->alloc_bytes, size);
    struct slot *old = map_find(key, flags);
    if (old) {
        /* Its free went by a path we do not see: the old block is gone, keep the new one. */
        live_sub(class_of(old->flags), old->size);
        *old = e;
        live_add(c, size);
    } else if (map_has_room()) {
        place(st.slots, st.cap, &e);
        st.count++;
        live_add(c, size);
    } /* else: out of memory for the map; the block is counted but not tracked */
    pthread_mutex_unlock(&st.lock);
}

bool roundtrim_cuda_free_begin(uint64_t key, unsigned flags, struct roundtrim_cuda_block *out)
{
    bool found = false;
    pthread_mutex_lock(&st.lock);
    struct slot *s = map_find(key, flags);
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
    } else if (!map_find(b->key, b->flags) && map_has_room()) {
        struct slot e = {b->key, b->size, 0, b->device, b->flags, 1};
        place(st.slots, st.cap, &e);
        st.count++;
    }
    pthread_mutex_unlock(&st.lock);
}

/* ---- VMM handles and their mappings ---- */

enum { RELEASE_UNTRACKED, RELEASE_TAKEN, RELEASE_MAPPED };

void roundtrim_cuda_release_begin(uint64_t handle, struct roundtrim_cuda_release *r)
{
    r->state = RELEASE_UNTRACKED;
    pthread_mutex_lock(&st.lock);
    struct slot *s = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
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
static bool released_handle_gone(struct slot *h, struct roundtrim_cuda_block *out)
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
    struct slot *h = map_find(r->block.key, ROUNDTRIM_CUDA_HANDLE);
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
    if (map_has_room()) {
        struct slot *h = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
        if (h && !map_find(va, KEY_MAPPING)) {
            h->link++;
            struct slot m = {va, size, handle, h->device, KEY_MAPPING, 1};
            place(st.slots, st.cap, &m);
            st.count++;
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
    struct slot *m = map_find(va, KEY_MAPPING);
    if (m) {
        uint64_t handle = m->link;
        *next = va + m->size;
        map_remove(m);
        struct slot *h = map_find(handle, ROUNDTRIM_CUDA_HANDLE);
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

bool roundtrim_cuda_capture_active(void)
{
    return atomic_load(&captures) > 0;
}

void roundtrim_cuda_capture_change(int delta)
{
    if (delta > 0) {
        atomic_fetch_add(&captures, 1);
        return;
    }
    int n = atomic_load(&captures);
    while (n > 0 && !atomic_compare_exchange_weak(&captures, &n, n - 1))
        ;
}

/* ---- the driver, on the worker thread ---- */

struct driver {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_synchronize)(void);
    CUresult (*primary_get_state)(CUdevice, unsigned *, int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*default_pool)(CUmemoryPool *, CUdevice);
    CUresult (*pool_trim)(CUmemoryPool, size_t);
    CUresult (*pool_get_attr)(CUmemoryPool, CUmemPool_attribute, void *);
};

/* Looked up in the driver the process loaded; never loads or initialises it. */
static bool driver_get(struct driver *d)
{
    d->ctx_get_current = roundtrim_cuda_driver_sym("cuCtxGetCurrent");
    d->ctx_set_current = roundtrim_cuda_driver_sym("cuCtxSetCurrent");
    d->ctx_synchronize = roundtrim_cuda_driver_sym("cuCtxSynchronize");
    d->primary_get_state = roundtrim_cuda_driver_sym("cuDevicePrimaryCtxGetState");
    d->primary_retain = roundtrim_cuda_driver_sym("cuDevicePrimaryCtxRetain");
    d->primary_release = roundtrim_cuda_driver_sym("cuDevicePrimaryCtxRelease_v2");
    if (!d->primary_release)
        d->primary_release = roundtrim_cuda_driver_sym("cuDevicePrimaryCtxRelease");
    d->mem_get_info = roundtrim_cuda_driver_sym("cuMemGetInfo_v2");
    d->default_pool = roundtrim_cuda_driver_sym("cuDeviceGetDefaultMemPool");
    d->pool_trim = roundtrim_cuda_driver_sym("cuMemPoolTrimTo");
    d->pool_get_attr = roundtrim_cuda_driver_sym("cuMemPoolGetAttribute");
    return d->ctx_get_current && d->ctx_set_current;
}

/* Makes the device's primary context current on this thread, only when the program already
 * made it active: retaining an inactive primary context would create one. Returns false when
 * there is none to use. */
static bool primary_enter(const struct driver *d, int dev)
{
    unsigned flags = 0;
    int active = 0;
    CUcontext ctx = NULL;
    if (!d->primary_get_state || !d->primary_retain || !d->primary_release)
        return false;
    if (d->primary_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return false;
    if (d->primary_retain(&ctx, dev) != CUDA_SUCCESS)
        return false;
    /* Checked again with our reference held, and given back at once on any doubt (the driver
     * going away at exit answers with an error here). What this cannot see: the program
     * dropping its last reference between the check above and our retain. Our retain then
     * re-creates the context, and our own reference makes it read active; it lives until
     * primary_leave releases it, a few driver calls later. Only a program tearing CUDA down
     * while a round is recorded meets that window; closing it would need the program's own
     * retains and releases counted in the hooks. */
    if (!ctx || d->primary_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active ||
        d->ctx_set_current(ctx) != CUDA_SUCCESS) {
        d->primary_release(dev);
        return false;
    }
    return true;
}

static void primary_leave(const struct driver *d, int dev, CUcontext saved)
{
    d->ctx_set_current(saved);
    d->primary_release(dev);
}

static CUcontext current_context(const struct driver *d)
{
    CUcontext ctx = NULL;
    if (d->ctx_get_current(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

/* Free and total memory of the devices the process used, summed, as the driver sees them, each
 * read inside its device's primary context. False, with *skipped saying why, when none could be
 * read. */
static bool mem_info(uint64_t *free_mem, uint64_t *total_mem, const char **skipped)
{
    struct driver d;
    size_t f = 0, t = 0;
    uint64_t mask = atomic_load(&devices_used);
    bool any = false, entered = false;
    *free_mem = *total_mem = 0;
    if (!mask) {
        *skipped = "no_device";
        return false;
    }
    if (!driver_get(&d) || !d.mem_get_info) {
        *skipped = "no_driver_entry";
        return false;
    }
    /* A capture in the program's default (global) mode forbids other threads the calls the
     * driver deems unsafe; no driver call of ours is worth invalidating a graph. */
    if (roundtrim_cuda_capture_active()) {
        *skipped = "cuda_capture";
        return false;
    }
    CUcontext saved = current_context(&d);
    bool captured = false;
    for (int dev = 0; dev < MAX_DEVICES && !captured; dev++) {
        if (!(mask & (1ull << dev)) || !primary_enter(&d, dev))
            continue;
        entered = true;
        captured = roundtrim_cuda_capture_active(); /* begun meanwhile: a partial sum is no sum */
        if (!captured && d.mem_get_info(&f, &t) == CUDA_SUCCESS) {
            *free_mem += f;
            *total_mem += t;
            any = true;
        }
        primary_leave(&d, dev, saved);
    }
    if (captured)
        any = false;
    if (!any)
        *skipped = captured ? "cuda_capture" : entered ? "driver_error" : "no_context";
    return any;
}

const char *roundtrim_cuda_context_enter(struct roundtrim_cuda_scope *scope)
{
    struct driver d;
    uint64_t mask = atomic_load(&devices_used);
    if (!mask)
        return "cuda_no_device";
    if (!driver_get(&d))
        return "cuda_no_driver_entry";
    scope->saved = current_context(&d);
    for (int dev = 0; dev < MAX_DEVICES; dev++) {
        if ((mask & (1ull << dev)) && primary_enter(&d, dev)) {
            scope->device = dev;
            return NULL;
        }
    }
    return "cuda_no_context";
}

void roundtrim_cuda_context_leave(const struct roundtrim_cuda_scope *scope)
{
    struct driver d;
    if (driver_get(&d))
        primary_leave(&d, scope->device, scope->saved);
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
    out->seen = atomic_load_explicit(&seen, memory_order_relaxed);
    if (!out->seen)
        return;
    class_snapshot(&st.cls[0], &out->device);
    class_snapshot(&st.cls[1], &out->host);
}

static void class_delta(struct roundtrim_cuda_class_counts *d,
                        const struct roundtrim_cuda_class_counts *now,
                        const struct roundtrim_cuda_class_counts *before)
{
    /* Two boundaries racing on two threads may queue their snapshots out of order. */
#define ABOVE(f) (now->f > before->f ? now->f - before->f : 0)
    d->alloc_calls = ABOVE(alloc_calls);
    d->alloc_bytes = ABOVE(alloc_bytes);
    d->free_calls = ABOVE(free_calls);
    d->free_bytes = ABOVE(free_bytes);
#undef ABOVE
    d->live_bytes = now->live_bytes;
    d->peak_bytes = now->peak_bytes;
}

bool roundtrim_cuda_round_fill(struct roundtrim_cuda_round *out,
                               const struct roundtrim_cuda_counts *now,
                               const struct roundtrim_cuda_counts *before, bool ask_driver)
{
    memset(out, 0, sizeof *out);
    if (!now->seen)
        return false;
    static const struct roundtrim_cuda_counts zero;
    if (!before->seen)
        before = &zero;
    struct roundtrim_cuda_class_counts dev, host;
    class_delta(&dev, &now->device, &before->device);
    class_delta(&host, &now->host, &before->host);
    out->alloc_calls = dev.alloc_calls;
    out->alloc_bytes = dev.alloc_bytes;
    out->free_calls = dev.free_calls;
    out->free_bytes = dev.free_bytes;
    out->live_bytes = dev.live_bytes;
    out->peak_bytes = dev.peak_bytes;
    out->host_alloc_calls = host.alloc_calls;
    out->host_alloc_bytes = host.alloc_bytes;
    out->host_free_calls = host.free_calls;
    out->host_free_bytes = host.free_bytes;
    out->host_live_bytes = host.live_bytes;
    out->present = true;
    if (!ask_driver) {
        out->mem_info_skipped = "exiting";
        return true;
    }
    out->have_mem_info = mem_info(&out->free_mem, &out->total_mem, &out->mem_info_skipped);
    return true;
}

/* Capture errors (900..908): a synchronize refused because a capture runs. */
static bool capture_error(CUresult rc)
{
    return rc >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
           rc <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

/* Trims one pool to zero; adds what its reserve shrank by. Not when a capture has begun. */
static bool trim_one(const struct driver *d, CUmemoryPool pool, uint64_t *released)
{
    cuuint64_t before = 0, after = 0;
    bool have_before =
        d->pool_get_attr &&
        d->pool_get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &before) == CUDA_SUCCESS;
    if (roundtrim_cuda_capture_active() || d->pool_trim(pool, 0) != CUDA_SUCCESS)
        return false;
    if (have_before &&
        d->pool_get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &after) == CUDA_SUCCESS &&
        before > after)
        *released += before - after;
    return true;
}

/* The next created pool of device dev (-1: host pools) after index *at that no destroy is waiting
 * on, marked busy. */
static bool created_pool_next(int *at, int dev, CUmemoryPool *pool)
{
    bool found = false;
    pthread_mutex_lock(&st.lock);
    for (int i = *at; i < MAX_POOLS; i++) {
        const struct created_pool *p = &st.pools[i];
        if (p->handle && !p->dying && (p->host ? -1 : p->device) == dev) {
            st.pools[i].busy++;
            *pool = (CUmemoryPool)p->handle;
            *at = i;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&st.lock);
    return found;
}

static void created_pool_done(int at)
{
    pthread_mutex_lock(&st.lock);
    st.pools[at].busy--;
    pthread_mutex_unlock(&st.lock);
}

/* Devices with created pools (bit per ordinal); *host: whether there are host pools. */
static uint64_t created_pool_devices(bool *host)
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
        else if (p->device >= 0 && p->device < MAX_DEVICES)
            mask |= 1ull << p->device;
    }
    pthread_mutex_unlock(&st.lock);
    return mask;
}

/* Trims the created pools of dev (-1: host pools); stops once a capture has begun. */
static bool trim_created(const struct driver *d, int dev, uint64_t *released, bool *stop)
{
    bool any = false;
    CUmemoryPool pool;
    for (int at = 0; !*stop && created_pool_next(&at, dev, &pool); at++) {
        any |= trim_one(d, pool, released);
        created_pool_done(at);
        *stop = roundtrim_cuda_capture_active();
    }
    return any;
}

/* One device's pools, inside its primary context: synchronize first (frees still queued on a
 * stream count as used and stay), then its default pool when it served stream-ordered
 * allocations, its created pools, and the host pools when asked. */
static bool trim_device(const struct driver *d, int dev, bool host_pools, uint64_t *released,
                        bool *stop)
{
    bool any = false;
    *stop = roundtrim_cuda_capture_active();
    if (!*stop && d->ctx_synchronize)
        *stop = capture_error(d->ctx_synchronize());
    CUmemoryPool pool = NULL;
    if (!*stop && (atomic_load(&devices_async) & (1ull << dev)) && d->default_pool &&
        d->default_pool(&pool, dev) == CUDA_SUCCESS && pool)
        any |= trim_one(d, pool, released);
    if (!*stop)
        any |= trim_created(d, dev, released, stop);
    if (!*stop && host_pools)
        any |= trim_created(d, -1, released, stop);
    return any;
}

bool roundtrim_cuda_pool_trim(uint64_t *released_bytes)
{
    struct driver d;
    bool host_pools;
    *released_bytes = 0;
    pool_trim_skipped = NULL;
    if (!atomic_load(&seen))
        return false;
    uint64_t work = atomic_load(&devices_async) | created_pool_devices(&host_pools);
    /* Host pools are trimmed inside the first device context the program uses. */
    uint64_t mask = work | (host_pools ? atomic_load(&devices_used) : 0);
    if (!work && !host_pools)
        return false; /* no stream-ordered memory: nothing to trim, nothing worth saying */
    /* A synchronize during a capture would invalidate the program's graph. */
    if (roundtrim_cuda_capture_active()) {
        pool_trim_skipped = "cuda_capture";
        return false;
    }
    if (!driver_get(&d) || !d.pool_trim) {
        pool_trim_skipped = "no_driver_entry";
        return false;
    }
    CUcontext saved = current_context(&d);
    bool any = false, stop = false, entered = false;
    /* Another thread may begin a capture at any moment: checked again right before every
     * synchronize and every trim, and once one has begun the rest waits for a later round. What
     * remains is the window inside the driver hooks themselves, between the driver starting a
     * capture and the hook counting it. A device whose primary context the program does not
     * keep active is left alone: entering it would create a context. */
    for (int dev = 0; dev < MAX_DEVICES && !stop; dev++) {
        bool host_here = host_pools && !entered;
        if (!(mask & (1ull << dev)) || (!(work & (1ull << dev)) && !host_here) ||
            !primary_enter(&d, dev))
            continue;
        any |= trim_device(&d, dev, host_here, released_bytes, &stop);
        entered = true;
        primary_leave(&d, dev, saved);
        stop = stop || roundtrim_cuda_capture_active();
    }
    if (stop)
        pool_trim_skipped = "cuda_capture";
    else if (!entered)
        pool_trim_skipped = "no_context";
    return any;
}

const char *roundtrim_cuda_pool_trim_skipped(void)
{
    return pool_trim_skipped;
}

void roundtrim_cuda_fork_child(void)
{
    /* Another thread of the parent may have held the lock at fork: start from a fresh one. */
    pthread_mutex_init(&st.lock, NULL);
    if (st.slots)
        munmap(st.slots, st.cap * sizeof *st.slots);
    st.slots = NULL;
    st.cap = st.count = 0;
    memset(st.cls, 0, sizeof st.cls);
    memset(st.pools, 0, sizeof st.pools);
    atomic_store(&seen, false);
    atomic_store(&devices_used, 0);
    atomic_store(&devices_async, 0);
    atomic_store(&captures, 0);
}
