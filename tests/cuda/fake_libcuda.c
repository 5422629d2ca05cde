/* fakecuda: the project's stand-in for the CUDA driver (built as build/fakecuda/libcuda.so.1,
 * soname libcuda.so.1), so that the CUDA hooks can be tested on machines without a GPU.
 *
 * It keeps the driver's ABI for the entry points roundtrim cares about and enough state to check
 * the accounting: devices, primary and created contexts (current per thread), device addresses
 * (fake: nothing may dereference them), pinned host memory (real memory), VMM handles, and
 * stream-ordered pools with reserved/used bytes that only a trim gives back.
 *
 * Environment:
 *   FAKECUDA_DEVICES=n           number of devices (default 1, at most 8)
 *   FAKECUDA_TOTAL_MEM=bytes     memory per device (default 16 GiB)
 *   FAKECUDA_FAIL_ALLOC_OVER=b   device allocations larger than b fail with OUT_OF_MEMORY (2)
 *   FAKECUDA_REPORT=1            at exit, print "fakecuda: init=... primary_retain=..." to stderr
 *   FAKECUDA_PROC_INTERNAL=1     cuGetProcAddress* hands out internal addresses (functions of the
 *                                same ABI that are not the exports), as a real driver may
 *   FAKECUDA_NO_STREAM_DEVICE=1  cuStreamGetDevice answers NOT_SUPPORTED (a driver before 12.8)
 *   FAKECUDA_SYNC_MS=ms          cuCtxSynchronize waits that long (GPU work still queued), asleep
 *
 * Like the real driver, the current context is per thread (a stack: cuCtxPush/PopCurrent), streams
 * belong to the context current when they were created, stream-ordered memory comes from the
 * default pool of the stream's device, and a VMM handle released while mapped keeps its memory
 * until its last mapping is gone. What tests read (the report line, fakecudaTestStat):
 *   touch_devN      driver calls that worked on device N (retain, synchronize, memory calls,
 *                   mem info, pool trims, default pool lookups, streams created)
 *   created_devN    contexts created on device N (a primary context activated, or cuCtxCreate)
 *   implicit_devN   contexts the runtime stand-in (fakecudaTestRuntimeCall) had to make current
 *                   on device N because the calling thread had none: what the real runtime does
 *                   on such a thread, creating device 0's context when it is not active
 *   trim_devN       pool trims of device N's pools
 *   trim_outside_ctx  pool trims with no context current, or one of another device
 *   ptsz_calls, legacy_calls  calls of the per-thread-stream variants and of their legacy twins
 *
 * Test-only entry points (not the driver's; programs reach them with dlsym on the driver handle):
 *   fakecudaTestStat(name)              a counter of the report ("sync", "trim", ...)
 *   fakecudaTestOnCall(entry, skip, cb) runs cb once, before the (skip+1)-th later call of
 *                                       entry ("retain", "sync"), so that a test can make
 *                                       something happen between two driver calls of roundtrim
 *   fakecudaTestSelfLookup(name)        dlsym of name on the driver's own handle, from inside it
 *   fakecudaTestRuntimeCall()           what a runtime API call (cudaFree...) does first: with no
 *                                       context current, make the primary context of device 0
 *                                       (the runtime's default device) current, activating it
 *                                       when inactive; returns the device the call ran on
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda/types.h"

#define EXPORT         __attribute__((visibility("default")))
#define DRIVER_VERSION 13050 /* newer than any toolkit roundtrim was checked against */
#define MAX_DEV        8
#define SLOT_SHIFT     32 /* one fake address range of 4 GiB per block */
#define SLOTS          (1u << 15)
#define ADDR_BASE      0x100000000000ull
#define POOL_GRANULE   (2ull << 20)
#define MAX_POOLS      64
#define UNKNOWN_RESULT 4242 /* what cuFakeUnknownEntry returns */
#define ROUND_UP(x, g) (((x) + (g)-1) / (g) * (g))

enum block_kind { BK_FREE, BK_LINEAR, BK_MANAGED, BK_POOL, BK_VMM };

struct block {
    enum block_kind kind;
    int device;
    int pool; /* for BK_POOL */
    uint64_t size;
    int maps;      /* BK_VMM: live mappings */
    bool released; /* BK_VMM: released while mapped, freed at its last unmap */
};

struct pool {
    bool used;
    int device; /* -1: host pool */
    uint64_t reserved, in_use;
};

struct context {
    int device;
    bool primary;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block blocks[SLOTS];
static uint32_t free_stack[SLOTS];
static uint32_t free_top;
static struct pool pools[MAX_POOLS]; /* [0, ndev): default pools */
static struct context primary[MAX_DEV];
static int primary_refs[MAX_DEV];
static bool initialised;
static int ndev = 1;
static uint64_t total_mem = 16ull << 30;
static uint64_t fail_over = UINT64_MAX;
static int captures;
static bool proc_internal, no_stream_device;
static uint64_t sync_ms; /* cuCtxSynchronize waits this long */
static unsigned long stat_init, stat_retain, stat_activate, stat_ctx_create, stat_trim, stat_sync;
static unsigned long stat_touch[MAX_DEV], stat_created[MAX_DEV], stat_implicit[MAX_DEV];
static unsigned long stat_trim_dev[MAX_DEV];
static unsigned long stat_trim_outside, stat_ptsz, stat_legacy;

/* The calling thread's context stack; the current context is its top. */
#define CTX_STACK 8
static __thread struct context *ctx_stack[CTX_STACK];
static __thread int ctx_depth;
#define current (ctx_depth ? ctx_stack[ctx_depth - 1] : NULL)

static void bump(unsigned long *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static void touch(int dev)
{
    if (dev >= 0 && dev < MAX_DEV)
        bump(&stat_touch[dev]);
}

static void created(int dev)
{
    if (dev >= 0 && dev < MAX_DEV)
        bump(&stat_created[dev]);
}

/* ---- setup ---- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static unsigned long stat(unsigned long *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static const struct {
    const char *name;
    unsigned long *counter;
    bool per_device; /* counter is an array of MAX_DEV: name<N> */
} stats[] = {{"init", &stat_init, false},
             {"primary_retain", &stat_retain, false},
             {"primary_activate", &stat_activate, false},
             {"ctx_create", &stat_ctx_create, false},
             {"trim", &stat_trim, false},
             {"sync", &stat_sync, false},
             {"trim_outside_ctx", &stat_trim_outside, false},
             {"ptsz_calls", &stat_ptsz, false},
             {"legacy_calls", &stat_legacy, false},
             {"touch_dev", stat_touch, true},
             {"created_dev", stat_created, true},
             {"implicit_dev", stat_implicit, true},
             {"trim_dev", stat_trim_dev, true}};

static void report(void)
{
    fprintf(stderr, "fakecuda:");
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
        for (int d = 0; d < (stats[i].per_device ? ndev : 1); d++) {
            if (stats[i].per_device)
                fprintf(stderr, " %s%d=%lu", stats[i].name, d, stat(&stats[i].counter[d]));
            else
                fprintf(stderr, " %s=%lu", stats[i].name, stat(stats[i].counter));
        }
    }
    fprintf(stderr, "\n");
}

EXPORT unsigned long fakecudaTestStat(const char *name)
{
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
        size_t n = strlen(stats[i].name);
        if (strncmp(stats[i].name, name, n) != 0)
            continue;
        if (!stats[i].per_device && name[n] == '\0')
            return stat(stats[i].counter);
        if (stats[i].per_device && name[n] >= '0' && name[n] < '0' + MAX_DEV && !name[n + 1])
            return stat(&stats[i].counter[name[n] - '0']);
    }
    return (unsigned long)-1;
}

/* The armed test callback (fakecudaTestOnCall); guarded by `lock`. */
static const char *hook_entry;
static unsigned hook_skip;
static void (*hook_cb)(void);

EXPORT void fakecudaTestOnCall(const char *entry, unsigned skip, void (*cb)(void))
{
    pthread_mutex_lock(&lock);
    hook_entry = entry;
    hook_skip = skip;
    hook_cb = cb;
    pthread_mutex_unlock(&lock);
}

/* Called first thing by the entry points a test may stop at; runs the callback unlocked. */
static void test_hook(const char *entry)
{
    void (*cb)(void) = NULL;
    pthread_mutex_lock(&lock);
    if (hook_cb && strcmp(hook_entry, entry) == 0) {
        if (hook_skip) {
            hook_skip--;
        } else {
            cb = hook_cb;
            hook_cb = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
    if (cb)
        cb();
}

__attribute__((constructor)) static void fake_setup(void)
{
    ndev = (int)env_u64("FAKECUDA_DEVICES", 1);
    if (ndev < 1 || ndev > MAX_DEV)
        ndev = 1;
    total_mem = env_u64("FAKECUDA_TOTAL_MEM", total_mem);
    fail_over = env_u64("FAKECUDA_FAIL_ALLOC_OVER", UINT64_MAX);
    proc_internal = env_u64("FAKECUDA_PROC_INTERNAL", 0) != 0;
    no_stream_device = env_u64("FAKECUDA_NO_STREAM_DEVICE", 0) != 0;
    sync_ms = env_u64("FAKECUDA_SYNC_MS", 0);
    for (uint32_t i = 0; i < SLOTS; i++)
        free_stack[i] = SLOTS - 1 - i;
    free_top = SLOTS;
    for (int d = 0; d < ndev; d++) {
        pools[d] = (struct pool){true, d, 0, 0};
        primary[d] = (struct context){d, true};
    }
    if (getenv("FAKECUDA_REPORT"))
        atexit(report);
}

static CUresult need_ctx(void)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- blocks (caller holds lock) ---- */

static bool block_new(enum block_kind kind, int device, int pool, uint64_t size, uint64_t *key)
{
    if (!free_top)
        return false;
    uint32_t i = free_stack[--free_top];
    blocks[i] = (struct block){kind, device, pool, size, 0, false};
    *key = ADDR_BASE + ((uint64_t)i << SLOT_SHIFT);
    return true;
}

static struct block *block_at(uint64_t key)
{
    if (key < ADDR_BASE || ((key - ADDR_BASE) & ((1ull << SLOT_SHIFT) - 1)))
        return NULL;
    uint64_t i = (key - ADDR_BASE) >> SLOT_SHIFT;
    return i < SLOTS && blocks[i].kind != BK_FREE ? &blocks[i] : NULL;
}

static void block_drop(struct block *b)
{
    b->kind = BK_FREE;
    free_stack[free_top++] = (uint32_t)(b - blocks);
}

static uint64_t device_used(int dev)
{
    uint64_t used = 0; /* a released VMM block still mapped is still used */
    for (uint32_t i = 0; i < SLOTS; i++)
        if (blocks[i].device == dev && (blocks[i].kind == BK_LINEAR ||
                                        blocks[i].kind == BK_MANAGED || blocks[i].kind == BK_VMM))
            used += blocks[i].size;
    for (int p = 0; p < MAX_POOLS; p++)
        if (pools[p].used && pools[p].device == dev)
            used += pools[p].reserved;
    return used;
}

static CUresult device_alloc(enum block_kind kind, int dev, uint64_t size, uint64_t *key)
{
    touch(dev);
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > fail_over || size > (1ull << SLOT_SHIFT))
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    bool ok = block_new(kind, dev, -1, size, key);
    pthread_mutex_unlock(&lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult block_free(uint64_t key, enum block_kind kind)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct block *b = block_at(key);
    if (b && (b->kind == kind || (kind == BK_LINEAR && b->kind == BK_MANAGED))) {
        block_drop(b);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- init, devices, contexts ---- */

EXPORT CUresult cuInit(unsigned int flags)
{
    __atomic_fetch_add(&stat_init, 1, __ATOMIC_RELAXED);
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    initialised = true;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    *count = ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    test_hook("retain");
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev]++ == 0) {
        stat_activate++; /* the real driver creates the context here */
        created(dev);
    }
    stat_retain++;
    pthread_mutex_unlock(&lock);
    touch(dev);
    *pctx = (CUcontext)&primary[dev];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] > 0)
        primary_refs[dev]--;
    else
        rc = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *active = primary_refs[dev] > 0;
    pthread_mutex_unlock(&lock);
    *flags = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    struct context *c = malloc(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (ctx_depth == CTX_STACK) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *c = (struct context){dev, false};
    __atomic_fetch_add(&stat_ctx_create, 1, __ATOMIC_RELAXED);
    created(dev);
    touch(dev);
    ctx_stack[ctx_depth++] = c; /* a created context is pushed on the caller's stack */
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    struct context *c = (struct context *)ctx;
    if (!c || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (current == c)
        ctx_depth--;
    free(c);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    *pctx = (CUcontext)current;
    return CUDA_SUCCESS;
}

/* Replaces the top of the stack; NULL empties that place (the driver pops it). */
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx)
        ctx_depth = ctx_depth ? ctx_depth - 1 : 0;
    else if (ctx_depth)
        ctx_stack[ctx_depth - 1] = (struct context *)ctx;
    else
        ctx_stack[ctx_depth++] = (struct context *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || ctx_depth == CTX_STACK)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = (struct context *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct context *c = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        *dev = current->device;
    return rc;
}

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(dev);
    *dev = ((struct context *)ctx)->device;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    test_hook("sync");
    __atomic_fetch_add(&stat_sync, 1, __ATOMIC_RELAXED);
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        touch(current->device);
    if (rc == CUDA_SUCCESS && sync_ms) {
        struct timespec t = {(time_t)(sync_ms / 1000), (long)(sync_ms % 1000) * 1000000L};
        while (nanosleep(&t, &t) != 0) {
        }
    }
    return rc;
}

/* The driver looking itself up by name, as a loader stub does with the driver it loads (WSL2's
 * libcuda.so.1): what it gets must be its own function, never an interposer's wrapper. */
EXPORT void *fakecudaTestSelfLookup(const char *name)
{
    void *self = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *p = self ? dlsym(self, name) : NULL;
    if (self)
        dlclose(self);
    return p;
}

/* The runtime stand-in: what cudaFree and friends do first on the calling thread. */
EXPORT int fakecudaTestRuntimeCall(void)
{
    if (!current) {
        CUcontext ctx;
        if (!initialised || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
            return -1;
        bump(&stat_implicit[0]);
        ctx_stack[ctx_depth++] = (struct context *)ctx;
    }
    touch(current->device);
    return current->device;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    touch(current->device);
    pthread_mutex_lock(&lock);
    uint64_t used = device_used(current->device);
    pthread_mutex_unlock(&lock);
    *total_bytes = total_mem;
    *free_bytes = used < total_mem ? total_mem - used : 0;
    return CUDA_SUCCESS;
}

/* ---- linear memory ---- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult rc = need_ctx();
    uint64_t key;
    if (rc == CUDA_SUCCESS &&
        (rc = device_alloc(BK_LINEAR, current->device, bytesize, &key)) == CUDA_SUCCESS)
        *dptr = key;
    return rc;
}

/* The legacy 32-bit ABI: a distinct answer, so tests can tell which variant they reached. */
EXPORT CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
    (void)dptr;
    (void)bytesize;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemFree(unsigned int dptr)
{
    (void)dptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes)
{
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = ROUND_UP(WidthInBytes, 512);
    uint64_t key;
    rc = device_alloc(BK_LINEAR, current->device, (uint64_t)pitch * Height, &key);
    if (rc == CUDA_SUCCESS) {
        *dptr = key;
        *pPitch = pitch;
    }
    return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    CUresult rc = need_ctx();
    uint64_t key;
    if (rc == CUDA_SUCCESS &&
        (rc = device_alloc(BK_MANAGED, current->device, bytesize, &key)) == CUDA_SUCCESS)
        *dptr = key;
    return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult rc = need_ctx();
    return rc == CUDA_SUCCESS ? block_free(dptr, BK_LINEAR) : rc;
}

/* ---- pinned host memory (real memory: programs may write to it) ---- */

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    (void)flags;
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = calloc(1, bytesize);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pp = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        free(p);
    return rc;
}

/* ---- pools and stream-ordered allocation ---- */

static struct pool *pool_of(CUmemoryPool h)
{
    struct pool *p = (struct pool *)h;
    return p >= pools && p < pools + MAX_POOLS && p->used ? p : NULL;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    touch(dev);
    *pool_out = (CUmemoryPool)&pools[dev];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!props)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id : -1;
    if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE && (dev < 0 || dev >= ndev))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    for (int i = ndev; i < MAX_POOLS; i++) {
        if (!pools[i].used) {
            pools[i] = (struct pool){true, dev, 0, 0};
            *pool = (CUmemoryPool)&pools[i];
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool h)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct pool *p = pool_of(h);
    if (p && p - pools >= ndev) {
        for (uint32_t i = 0; i < SLOTS; i++) /* outstanding blocks die with the pool */
            if (blocks[i].kind == BK_POOL && blocks[i].pool == p - pools)
                block_drop(&blocks[i]);
        p->used = false;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool h, size_t keep)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    __atomic_fetch_add(&stat_trim, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&lock);
    struct pool *p = pool_of(h);
    if (p && (!current || (p->device >= 0 && p->device != current->device)))
        stat_trim_outside++;
    if (p)
        touch(p->device);
    if (p && p->device >= 0)
        stat_trim_dev[p->device]++;
    if (captures > 0) {
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* tests expect no trim during a capture */
    } else if (p) {
        uint64_t floor = ROUND_UP(p->in_use, POOL_GRANULE);
        uint64_t target = floor > keep ? floor : ROUND_UP((uint64_t)keep, POOL_GRANULE);
        if (p->reserved > target)
            p->reserved = target;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool h, CUmemPool_attribute attr, void *value)
{
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct pool *p = pool_of(h);
    if (!p || !value)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        *(cuuint64_t *)value = p->reserved;
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
        *(cuuint64_t *)value = p->in_use;
    else
        rc = CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_unlock(&lock);
    return rc;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t size, struct pool *p)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > fail_over || size > (1ull << SLOT_SHIFT))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t key;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    touch(p->device);
    pthread_mutex_lock(&lock);
    if (block_new(BK_POOL, p->device, (int)(p - pools), size, &key)) {
        p->in_use += size;
        if (p->in_use > p->reserved)
            p->reserved = ROUND_UP(p->in_use, POOL_GRANULE);
        *dptr = key;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- streams: each belongs to the context current when it was created ---- */

#define MAX_STREAMS 64

struct stream {
    bool used;
    struct context *ctx;
};

static struct stream streams[MAX_STREAMS];

EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    (void)flags;
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (!streams[i].used) {
            streams[i] = (struct stream){true, current};
            *phStream = (CUstream)&streams[i];
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    touch(current->device);
    return rc;
}

static struct stream *stream_of(CUstream h)
{
    struct stream *s = (struct stream *)h;
    return s >= streams && s < streams + MAX_STREAMS && s->used ? s : NULL;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    pthread_mutex_lock(&lock);
    struct stream *s = stream_of(h);
    if (s)
        s->used = false;
    pthread_mutex_unlock(&lock);
    return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A created stream's context; the default streams (and the arbitrary handles the capture tests
 * pass) are the current context's. */
static struct context *stream_ctx(CUstream h)
{
    pthread_mutex_lock(&lock);
    struct stream *s = stream_of(h);
    struct context *c = s ? s->ctx : current;
    pthread_mutex_unlock(&lock);
    return c;
}

EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
    struct context *c = stream_ctx(h);
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext *pctx)
{
    return cuStreamGetCtx(h, pctx);
}

EXPORT CUresult cuStreamGetDevice(CUstream h, CUdevice *dev)
{
    if (no_stream_device)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct context *c = stream_ctx(h);
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = c->device;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamGetDevice_ptsz(CUstream h, CUdevice *dev)
{
    return cuStreamGetDevice(h, dev);
}

/* ---- stream-ordered allocation: from the stream's device's pool ---- */

static void variant_call(bool ptsz)
{
    bump(ptsz ? &stat_ptsz : &stat_legacy);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream stream, bool ptsz)
{
    variant_call(ptsz);
    CUresult rc = need_ctx();
    struct context *c = stream_ctx(stream);
    return rc == CUDA_SUCCESS ? pool_alloc(dptr, bytesize, &pools[c->device]) : rc;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return alloc_async(dptr, bytesize, stream, false);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return alloc_async(dptr, bytesize, stream, true);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, bool ptsz)
{
    variant_call(ptsz);
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct pool *p = pool_of(pool);
    return p ? pool_alloc(dptr, bytesize, p) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream stream)
{
    (void)stream;
    return alloc_from_pool(dptr, bytesize, pool, false);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream)
{
    (void)stream;
    return alloc_from_pool(dptr, bytesize, pool, true);
}

static CUresult free_async(CUdeviceptr dptr, bool ptsz)
{
    variant_call(ptsz);
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct block *b = block_at(dptr);
    if (b && b->kind == BK_POOL) {
        pools[b->pool].in_use -= b->size; /* back to the pool: still reserved */
        block_drop(b);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return free_async(dptr, false);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return free_async(dptr, true);
}

/* ---- virtual memory management ---- */

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!prop || flags || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop->location.id < 0 || prop->location.id >= ndev || size % POOL_GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t key;
    CUresult rc = device_alloc(BK_VMM, prop->location.id, size, &key);
    if (rc == CUDA_SUCCESS)
        *handle = key; /* handles share the fake address space; roundtrim keys them apart */
    return rc;
}

/* Released while mapped: the memory stays (and stays used) until its last mapping goes. */
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct block *b = block_at(handle);
    if (b && b->kind == BK_VMM && !b->released) {
        if (b->maps > 0)
            b->released = true;
        else
            block_drop(b);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

#define VA_BASE      0x700000000000ull
#define MAX_MAPPINGS 256

static struct mapping {
    uint64_t va, size, handle; /* va 0: free entry */
} mappings[MAX_MAPPINGS];
static uint64_t va_next = VA_BASE;

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    (void)alignment;
    (void)addr;
    (void)flags;
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!size || size % POOL_GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *ptr = va_next;
    va_next += ROUND_UP(size, 1ull << 30);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    (void)size;
    return ptr >= VA_BASE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct block *b = block_at(handle);
    if (b && b->kind == BK_VMM && !b->released && !flags && ptr >= VA_BASE &&
        offset + size <= b->size) {
        for (int i = 0; i < MAX_MAPPINGS; i++) {
            if (!mappings[i].va) {
                mappings[i] = (struct mapping){ptr, size, handle};
                b->maps++;
                rc = CUDA_SUCCESS;
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The range may cover several mappings, each entirely. */
EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPPINGS; i++) {
        struct mapping *m = &mappings[i];
        if (!m->va || m->va < ptr || m->va + m->size > ptr + size)
            continue;
        struct block *b = block_at(m->handle);
        if (b && b->kind == BK_VMM && --b->maps == 0 && b->released)
            block_drop(b);
        *m = (struct mapping){0, 0, 0};
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- stream capture ---- */

static CUresult capture_begin(bool ptsz)
{
    variant_call(ptsz);
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        __atomic_fetch_add(&captures, 1, __ATOMIC_RELAXED);
    return rc;
}

EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    (void)s;
    return capture_begin(false);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    (void)s;
    return capture_begin(true);
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    (void)s;
    (void)mode;
    return capture_begin(false);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    (void)s;
    (void)mode;
    return capture_begin(true);
}

static CUresult capture_end(CUgraph *graph, bool ptsz)
{
    variant_call(ptsz);
    if (__atomic_load_n(&captures, __ATOMIC_RELAXED) <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    __atomic_fetch_sub(&captures, 1, __ATOMIC_RELAXED);
    if (graph)
        *graph = (CUgraph)(uintptr_t)0x6a;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *graph)
{
    (void)s;
    return capture_end(graph, false);
}

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph)
{
    (void)s;
    return capture_end(graph, true);
}

/* ---- an entry point roundtrim knows nothing about ---- */

EXPORT CUresult cuFakeUnknownEntry(int arg)
{
    return UNKNOWN_RESULT + arg;
}

/* A future ABI of cuMemAlloc (selected from 13050 on), which a wrapper of cuMemAlloc_v2 must
 * never stand in for: it answers with a code of its own. */
#define FUTURE_RESULT 4343
EXPORT CUresult cuMemAlloc_v3(CUdeviceptr *dptr, size_t bytesize, unsigned long long flags)
{
    (void)dptr;
    (void)bytesize;
    (void)flags;
    return FUTURE_RESULT;
}

/* ---- cuGetProcAddress ---- */

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

EXPORT CUresult cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status);

/* FAKECUDA_PROC_INTERNAL: the addresses handed out instead of the exports, for the entry points
 * roundtrim wraps. Same ABI and behaviour, other addresses, as a real driver's internal table. */
#define INTERNAL(name, params, args)                                                               \
    static CUresult internal_##name params                                                         \
    {                                                                                              \
        return name args;                                                                          \
    }
INTERNAL(cuMemAlloc_v2, (CUdeviceptr * d, size_t n), (d, n))
INTERNAL(cuMemAllocPitch_v2, (CUdeviceptr * d, size_t *p, size_t w, size_t h, unsigned e),
         (d, p, w, h, e))
INTERNAL(cuMemFree_v2, (CUdeviceptr d), (d))
INTERNAL(cuMemAllocManaged, (CUdeviceptr * d, size_t n, unsigned f), (d, n, f))
INTERNAL(cuMemHostAlloc, (void **p, size_t n, unsigned f), (p, n, f))
INTERNAL(cuMemAllocHost_v2, (void **p, size_t n), (p, n))
INTERNAL(cuMemFreeHost, (void *p), (p))
INTERNAL(cuMemAllocAsync, (CUdeviceptr * d, size_t n, CUstream s), (d, n, s))
INTERNAL(cuMemAllocAsync_ptsz, (CUdeviceptr * d, size_t n, CUstream s), (d, n, s))
INTERNAL(cuMemAllocFromPoolAsync, (CUdeviceptr * d, size_t n, CUmemoryPool p, CUstream s),
         (d, n, p, s))
INTERNAL(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr * d, size_t n, CUmemoryPool p, CUstream s),
         (d, n, p, s))
INTERNAL(cuMemFreeAsync, (CUdeviceptr d, CUstream s), (d, s))
INTERNAL(cuMemFreeAsync_ptsz, (CUdeviceptr d, CUstream s), (d, s))
INTERNAL(cuMemCreate,
         (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp *p,
          unsigned long long f),
         (h, n, p, f))
INTERNAL(cuMemRelease, (CUmemGenericAllocationHandle h), (h))
INTERNAL(cuMemMap,
         (CUdeviceptr p, size_t n, size_t o, CUmemGenericAllocationHandle h, unsigned long long f),
         (p, n, o, h, f))
INTERNAL(cuMemUnmap, (CUdeviceptr p, size_t n), (p, n))
INTERNAL(cuMemPoolCreate, (CUmemoryPool * p, const CUmemPoolProps *props), (p, props))
INTERNAL(cuMemPoolDestroy, (CUmemoryPool p), (p))
INTERNAL(cuStreamBeginCapture, (CUstream s), (s))
INTERNAL(cuStreamBeginCapture_ptsz, (CUstream s), (s))
INTERNAL(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m), (s, m))
INTERNAL(cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode m), (s, m))
INTERNAL(cuStreamEndCapture, (CUstream s, CUgraph *g), (s, g))
INTERNAL(cuStreamEndCapture_ptsz, (CUstream s, CUgraph *g), (s, g))
INTERNAL(cuGetProcAddress, (const char *n, void **p, int v, cuuint64_t f), (n, p, v, f))
INTERNAL(cuGetProcAddress_v2,
         (const char *n, void **p, int v, cuuint64_t f, CUdriverProcAddressQueryResult *st),
         (n, p, v, f, st))
#undef INTERNAL

struct proc {
    const char *name; /* the base name callers ask for */
    int since;        /* CUDA version that introduced this variant */
    bool ptsz;        /* per-thread default stream variant */
    void *fn;
    void *internal; /* what FAKECUDA_PROC_INTERNAL hands out */
};

#define P(name, since, fn)                                                                         \
    {                                                                                              \
        name, since, false, (void *)fn, (void *)fn                                                 \
    }
#define PI(name, since, fn)                                                                        \
    {                                                                                              \
        name, since, false, (void *)fn, (void *)internal_##fn                                      \
    }
#define PT(name, since, fn)                                                                        \
    {                                                                                              \
        name, since, true, (void *)fn, (void *)fn                                                  \
    }
#define PTI(name, since, fn)                                                                       \
    {                                                                                              \
        name, since, true, (void *)fn, (void *)internal_##fn                                       \
    }

static const struct proc procs[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    P("cuCtxCreate", 3020, cuCtxCreate_v2),
    P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    P("cuStreamCreate", 2000, cuStreamCreate),
    P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamGetCtx", 9020, cuStreamGetCtx),
    PT("cuStreamGetCtx", 9020, cuStreamGetCtx_ptsz),
    P("cuStreamGetDevice", 12080, cuStreamGetDevice),
    PT("cuStreamGetDevice", 12080, cuStreamGetDevice_ptsz),
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemAlloc", 2000, cuMemAlloc),
    PI("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemFree", 2000, cuMemFree),
    PI("cuMemFree", 3020, cuMemFree_v2),
    PI("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    PI("cuMemAllocManaged", 6000, cuMemAllocManaged),
    PI("cuMemHostAlloc", 2020, cuMemHostAlloc),
    PI("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    PI("cuMemFreeHost", 2000, cuMemFreeHost),
    PI("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PTI("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    PI("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PTI("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    PI("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PTI("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    PI("cuMemCreate", 10020, cuMemCreate),
    PI("cuMemRelease", 10020, cuMemRelease),
    PI("cuMemMap", 10020, cuMemMap),
    PI("cuMemUnmap", 10020, cuMemUnmap),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuMemAlloc", 13050, cuMemAlloc_v3),
    PI("cuMemPoolCreate", 11020, cuMemPoolCreate),
    PI("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    PI("cuStreamBeginCapture", 10000, cuStreamBeginCapture),
    PTI("cuStreamBeginCapture", 10000, cuStreamBeginCapture_ptsz),
    PI("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    PTI("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
    PI("cuStreamEndCapture", 10000, cuStreamEndCapture),
    PTI("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    PI("cuGetProcAddress", 11030, cuGetProcAddress),
    PI("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    P("cuFakeUnknownEntry", 1000, cuFakeUnknownEntry),
};

/* Like the driver: the newest variant not newer than the caller's version; with the per-thread
 * flag a _ptsz variant is preferred and the legacy one is the fallback. */
static const struct proc *proc_pick(const char *symbol, int version, bool per_thread, bool *known)
{
    const struct proc *best = NULL;
    *known = false;
    for (int pass = per_thread ? 0 : 1; pass < 2 && !best; pass++) {
        bool want_ptsz = pass == 0;
        for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
            if (strcmp(procs[i].name, symbol) != 0)
                continue;
            *known = true;
            if (procs[i].ptsz != want_ptsz || procs[i].since > version)
                continue;
            if (!best || procs[i].since > best->since)
                best = &procs[i];
        }
    }
    return best;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || version > DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;
    bool known;
    const struct proc *p = proc_pick(
        symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &known);
    *pfn = !p ? NULL : proc_internal ? p->internal : p->fn;
    if (status)
        *status = p       ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

/* As cuda.h's per-thread-stream builds call it: no stream flavour named means per-thread. */
EXPORT CUresult cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!(flags &
          (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return cuGetProcAddress_v2(symbol, pfn, version, flags, status);
}
