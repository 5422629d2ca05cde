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
 *
 * Test-only entry points (not the driver's; programs reach them with dlsym on the driver handle):
 *   fakecudaTestStat(name)              a counter of the report ("sync", "trim", ...)
 *   fakecudaTestOnCall(entry, skip, cb) runs cb once, before the (skip+1)-th later call of
 *                                       entry ("retain", "sync"), so that a test can make
 *                                       something happen between two driver calls of roundtrim
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/cuda_types.h"

#define EXPORT         __attribute__((visibility("default")))
#define DRIVER_VERSION 13000
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
static unsigned long stat_init, stat_retain, stat_activate, stat_ctx_create, stat_trim, stat_sync;
static __thread struct context *current;

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

static void report(void)
{
    fprintf(stderr,
            "fakecuda: init=%lu primary_retain=%lu primary_activate=%lu ctx_create=%lu trim=%lu "
            "sync=%lu\n",
            stat(&stat_init), stat(&stat_retain), stat(&stat_activate), stat(&stat_ctx_create),
            stat(&stat_trim), stat(&stat_sync));
}

EXPORT unsigned long fakecudaTestStat(const char *name)
{
    static const struct {
        const char *name;
        unsigned long *counter;
    } stats[] = {{"init", &stat_init},
                 {"primary_retain", &stat_retain},
                 {"primary_activate", &stat_activate},
                 {"ctx_create", &stat_ctx_create},
                 {"trim", &stat_trim},
                 {"sync", &stat_sync}};
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
        if (strcmp(stats[i].name, name) == 0)
            return stat(stats[i].counter);
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
    blocks[i] = (struct block){kind, device, pool, size};
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
    uint64_t used = 0;
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
    if (primary_refs[dev]++ == 0)
        stat_activate++; /* the real driver creates the context here */
    stat_retain++;
    pthread_mutex_unlock(&lock);
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
    *c = (struct context){dev, false};
    __atomic_fetch_add(&stat_ctx_create, 1, __ATOMIC_RELAXED);
    current = c;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    struct context *c = (struct context *)ctx;
    if (!c || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (current == c)
        current = NULL;
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

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    current = (struct context *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        *dev = current->device;
    return rc;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    test_hook("sync");
    __atomic_fetch_add(&stat_sync, 1, __ATOMIC_RELAXED);
    return need_ctx();
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
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

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    (void)stream;
    CUresult rc = need_ctx();
    return rc == CUDA_SUCCESS ? pool_alloc(dptr, bytesize, &pools[current->device]) : rc;
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return cuMemAllocAsync(dptr, bytesize, stream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream stream)
{
    (void)stream;
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct pool *p = pool_of(pool);
    return p ? pool_alloc(dptr, bytesize, p) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream)
{
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, stream);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
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

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return cuMemFreeAsync(dptr, stream);
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

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    return block_free(handle, BK_VMM);
}

/* ---- stream capture ---- */

static CUresult capture_begin(void)
{
    CUresult rc = need_ctx();
    if (rc == CUDA_SUCCESS)
        __atomic_fetch_add(&captures, 1, __ATOMIC_RELAXED);
    return rc;
}

EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    (void)s;
    return capture_begin();
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    (void)s;
    return capture_begin();
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    (void)s;
    (void)mode;
    return capture_begin();
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    (void)s;
    (void)mode;
    return capture_begin();
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *graph)
{
    (void)s;
    if (__atomic_load_n(&captures, __ATOMIC_RELAXED) <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    __atomic_fetch_sub(&captures, 1, __ATOMIC_RELAXED);
    if (graph)
        *graph = (CUgraph)(uintptr_t)0x6a;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph)
{
    return cuStreamEndCapture(s, graph);
}

/* ---- an entry point roundtrim knows nothing about ---- */

EXPORT CUresult cuFakeUnknownEntry(int arg)
{
    return UNKNOWN_RESULT + arg;
}

/* ---- cuGetProcAddress ---- */

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

struct proc {
    const char *name; /* the base name callers ask for */
    int since;        /* CUDA version that introduced this variant */
    bool ptsz;        /* per-thread default stream variant */
    void *fn;
};

#define P(name, since, fn)                                                                         \
    {                                                                                              \
        name, since, false, (void *)fn                                                             \
    }
#define PT(name, since, fn)                                                                        \
    {                                                                                              \
        name, since, true, (void *)fn                                                              \
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
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemAlloc", 2000, cuMemAlloc),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemFree", 2000, cuMemFree),
    P("cuMemFree", 3020, cuMemFree_v2),
    P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged),
    P("cuMemHostAlloc", 2020, cuMemHostAlloc),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PT("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PT("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemPoolCreate", 11020, cuMemPoolCreate),
    P("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuStreamBeginCapture", 10000, cuStreamBeginCapture),
    PT("cuStreamBeginCapture", 10000, cuStreamBeginCapture_ptsz),
    P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    PT("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
    P("cuStreamEndCapture", 10000, cuStreamEndCapture),
    PT("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    P("cuGetProcAddress", 11030, cuGetProcAddress),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
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
    *pfn = p ? p->fn : NULL;
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
