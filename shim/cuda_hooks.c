/* CUDA driver entry points: each exported wrapper has exactly the driver's signature, forwards to
 * the real driver and tells runtime/cuda/track.c what happened.
 *
 * Programs reach the driver three ways, and all three end here:
 *  - linked with -lcuda: the dynamic linker binds their calls to these exports (we are preloaded);
 *  - dlopen("libcuda.so.1") + dlsym: the dlsym hook hands out these wrappers (shim/dlsym_hook.c);
 *  - cuGetProcAddress*: the wrappers below take the driver's answer for the requested name,
 *    version and flags, decide which exact variant (ABI) that request selects (the PFN_* versions
 *    of cudaTypedefs.h: cuMemAlloc at >= 3020 is cuMemAlloc_v2, the per-thread-stream flag
 *    selects _ptsz...), keep the driver's pointer as that wrapper's real function and hand out
 *    the wrapper. A pointer equal to one of the driver's exports names its variant by itself:
 *    that match is the fallback, and wins when the two disagree.
 *
 * The real function of a wrapper is stored once per wrapper: the first answer a lookup gave for
 * that exact variant (cuGetProcAddress, or dlsym on the driver's handle). A variant is one ABI and
 * one stream semantics, so a driver that hands out another address for it later (an internal
 * address next to the export) hands out the same implementation, and keeping the first means
 * one implementation per wrapper from then on. Before any lookup the wrapper uses what the
 * dynamic linker finds after this library (RTLD_NEXT: the driver, or another interposer loaded
 * after us); the first lookup's answer replaces that once. Another interposer's pointer coming
 * back from a lookup is kept as the real function like any other: its hook stays in the chain,
 * after ours.
 *
 * Runtime API: libcudart (shared or static) fetches the driver through cuGetProcAddress, so
 * cudaMalloc, cudaMallocAsync, cudaFree... are counted here, at the driver level, and only here:
 * hooking cudaMalloc as well would count the same bytes twice.
 *
 * Not wrapped (passed through untouched): the legacy 32-bit ABI entry points (unversioned
 * cuMemAlloc, cuMemFree, cuMemAllocPitch, cuMemAllocHost), memory imported from other processes
 * (cuIpcOpenMemHandle, cuMemPoolImportPointer, cuImportExternalMemory: the exporter owns it) and
 * graph memory nodes (cuGraphAddMemAllocNode). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cuda/account.h"
#include "runtime/core/export.h"
#include "runtime/cuda/driver.h"
#include "runtime/core/real_dlsym.h"
#include "shim/cuda_hooks.h"
#include "runtime/cuda/types.h"

/* The wrappers' prototypes: exactly the driver's (checked against cuda.h, see cuda_types.h). */
#define RT_API ROUNDTRIM_EXPORT CUresult
RT_API cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
RT_API cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                          unsigned int ElementSizeBytes);
RT_API cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
RT_API cuMemFree_v2(CUdeviceptr dptr);
RT_API cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
RT_API cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
RT_API cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                               CUstream hStream);
RT_API cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                    CUstream hStream);
RT_API cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
RT_API cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
RT_API cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                   const CUmemAllocationProp *prop, unsigned long long flags);
RT_API cuMemRelease(CUmemGenericAllocationHandle handle);
RT_API cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                unsigned long long flags);
RT_API cuMemUnmap(CUdeviceptr ptr, size_t size);
RT_API cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
RT_API cuMemAllocHost_v2(void **pp, size_t bytesize);
RT_API cuMemFreeHost(void *p);
RT_API cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
RT_API cuMemPoolDestroy(CUmemoryPool pool);
RT_API cuStreamBeginCapture(CUstream hStream);
RT_API cuStreamBeginCapture_ptsz(CUstream hStream);
RT_API cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
RT_API cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
RT_API cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                   const CUgraphNode *dependencies,
                                   const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                   CUstreamCaptureMode mode);
RT_API cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                        const CUgraphNode *dependencies,
                                        const CUgraphEdgeData *dependencyData,
                                        size_t numDependencies, CUstreamCaptureMode mode);
RT_API cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
RT_API cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
RT_API cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
RT_API cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                           CUdriverProcAddressQueryResult *symbolStatus);
RT_API cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                CUdriverProcAddressQueryResult *symbolStatus);
#undef RT_API

/* Every entry point we wrap, by exported name. */
#define ROUNDTRIM_CUDA_ENTRIES(X)                                                                  \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemAllocPitch_v2)                                                                          \
    X(cuMemAllocManaged)                                                                           \
    X(cuMemFree_v2)                                                                                \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemAllocAsync_ptsz)                                                                        \
    X(cuMemAllocFromPoolAsync)                                                                     \
    X(cuMemAllocFromPoolAsync_ptsz)                                                                \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemFreeAsync_ptsz)                                                                         \
    X(cuMemCreate)                                                                                 \
    X(cuMemRelease)                                                                                \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemAllocHost_v2)                                                                           \
    X(cuMemFreeHost)                                                                               \
    X(cuMemPoolCreate)                                                                             \
    X(cuMemPoolDestroy)                                                                            \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamBeginCapture_ptsz)                                                                   \
    X(cuStreamBeginCapture_v2)                                                                     \
    X(cuStreamBeginCapture_v2_ptsz)                                                                \
    X(cuStreamBeginCaptureToGraph)                                                                 \
    X(cuStreamBeginCaptureToGraph_ptsz)                                                            \
    X(cuStreamEndCapture)                                                                          \
    X(cuStreamEndCapture_ptsz)                                                                     \
    X(cuGetProcAddress)                                                                            \
    X(cuGetProcAddress_v2)                                                                         \
    X(cuGetProcAddress_v2_ptsz)

enum entry_id {
#define X(name) ID_##name,
    ROUNDTRIM_CUDA_ENTRIES(X)
#undef X
        ENTRY_COUNT
};

static const char *const entry_name[ENTRY_COUNT] = {
#define X(name) #name,
    ROUNDTRIM_CUDA_ENTRIES(X)
#undef X
};

static void *const entry_wrapper[ENTRY_COUNT] = {
#define X(name) [ID_##name] = (void *)name,
    ROUNDTRIM_CUDA_ENTRIES(X)
#undef X
};

/* The driver's implementation behind each wrapper: what a lookup answered for that variant
 * (written once), else what RTLD_NEXT found (written once, used until a lookup answers). */
static _Atomic(void *) entry_real[ENTRY_COUNT];
static _Atomic(void *) entry_next[ENTRY_COUNT];

/* ---- finding the driver: runtime/cuda/driver.c ---- */

static bool is_wrapper(const void *p)
{
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (entry_wrapper[i] == p)
            return true;
    return false;
}

/* A lookup's answer for exactly this variant; the first one stays (see the top of the file). */
static void note_real(enum entry_id id, void *p)
{
    void *expected = NULL;
    if (!is_wrapper(p))
        atomic_compare_exchange_strong(&entry_real[id], &expected, p);
}

static void *resolve_real(enum entry_id id)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    if (!rdlsym)
        return NULL;
    /* Called from this library, RTLD_NEXT means "after libroundtrim.so": the driver when the
     * program linked it, or another interposer loaded after us. */
    void *p = rdlsym(RTLD_NEXT, entry_name[id]);
    if (!p || p == entry_wrapper[id]) {
        void *h = roundtrim_cuda_driver_handle();
        p = h ? rdlsym(h, entry_name[id]) : NULL;
    }
    if (!p || is_wrapper(p))
        return NULL;
    void *expected = NULL;
    atomic_compare_exchange_strong(&entry_next[id], &expected, p);
    roundtrim_cuda_driver_hint(p);
    return atomic_load_explicit(&entry_next[id], memory_order_acquire);
}

static inline void *real_fn(enum entry_id id)
{
    void *p = atomic_load_explicit(&entry_real[id], memory_order_acquire);
    if (p)
        return p;
    p = atomic_load_explicit(&entry_next[id], memory_order_acquire);
    return p ? p : resolve_real(id);
}

/* The real function, with the wrapper's own type: the wrapper's signature is the driver's. */
#define REAL(name) ((__typeof__(&name))real_fn(ID_##name))

/* Returned when a wrapper is called in a process with no driver (dlsym(RTLD_DEFAULT, ...) finds
 * our exports even then). */
#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

/* ---- small driver helpers (no lock of ours is held while they run) ---- */

/* Driver entry points the hooks call themselves, by exported name, found once. */
#define HELPER_ENTRIES(X)                                                                          \
    X(cuCtxGetDevice, CUresult (*)(CUdevice *))                                                    \
    X(cuCtxGetCurrent, CUresult (*)(CUcontext *))                                                  \
    X(cuCtxPushCurrent_v2, CUresult (*)(CUcontext))                                                \
    X(cuCtxPopCurrent_v2, CUresult (*)(CUcontext *))                                               \
    X(cuStreamGetDevice, CUresult (*)(CUstream, CUdevice *))                                       \
    X(cuStreamGetCtx, CUresult (*)(CUstream, CUcontext *))

enum helper_id {
#define X(name, type) H_##name,
    HELPER_ENTRIES(X)
#undef X
        HELPER_COUNT
};

static _Atomic(void *) helper_fn[HELPER_COUNT];

static void *helper_get(enum helper_id id)
{
    static const char *const names[HELPER_COUNT] = {
#define X(name, type) #name,
        HELPER_ENTRIES(X)
#undef X
    };
    void *p = atomic_load_explicit(&helper_fn[id], memory_order_acquire);
    if (!p && (p = roundtrim_cuda_driver_sym(names[id])) != NULL)
        atomic_store_explicit(&helper_fn[id], p, memory_order_release);
    return p;
}

#define HELPER(name) ((__typeof__(&name))helper_get(H_##name))

/* The helpers' prototypes, for HELPER()'s types only (never defined here). */
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx);

static int current_device(void)
{
    __typeof__(&cuCtxGetDevice) get = HELPER(cuCtxGetDevice);
    CUdevice dev;
    return get && get(&dev) == CUDA_SUCCESS ? dev : -1;
}

/* The device of a stream: stream-ordered memory comes from that device's pool, whichever context
 * is current. cuStreamGetDevice (CUDA 12.8) answers directly; before it, the stream's context
 * is asked for its device (made current for that one question when it is not already). */
static int stream_device(CUstream stream)
{
    __typeof__(&cuStreamGetDevice) get_device = HELPER(cuStreamGetDevice);
    CUdevice dev;
    if (get_device && get_device(stream, &dev) == CUDA_SUCCESS)
        return dev;
    __typeof__(&cuStreamGetCtx) get_ctx = HELPER(cuStreamGetCtx);
    __typeof__(&cuCtxGetCurrent) get_current = HELPER(cuCtxGetCurrent);
    CUcontext ctx = NULL, cur = NULL;
    if (!get_ctx || !get_current || get_ctx(stream, &ctx) != CUDA_SUCCESS || !ctx ||
        get_current(&cur) != CUDA_SUCCESS || ctx == cur)
        return current_device();
    __typeof__(&cuCtxPushCurrent_v2) push = HELPER(cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = HELPER(cuCtxPopCurrent_v2);
    if (!push || !pop || push(ctx) != CUDA_SUCCESS)
        return current_device();
    int d = current_device();
    pop(&cur);
    return d;
}

static int location_device(const CUmemLocation *loc, bool *host)
{
    *host = loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
            loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
    return loc->type == CU_MEM_LOCATION_TYPE_DEVICE ? loc->id : -1;
}

static void device_alloc(CUdeviceptr ptr, uint64_t size)
{
    int dev = current_device();
    roundtrim_cuda_alloc_note(ptr, size, dev, 0);
    roundtrim_cuda_device_note(dev);
}

/* Frees: the block leaves the map before the driver can reuse its address. */
static CUresult tracked_free(uint64_t key, unsigned flags, CUresult (*forward)(void *), void *arg)
{
    struct roundtrim_cuda_block block;
    bool known = roundtrim_cuda_free_begin(key, flags, &block);
    CUresult rc = forward(arg);
    roundtrim_cuda_mark_seen();
    if (known)
        roundtrim_cuda_free_end(&block, rc == CUDA_SUCCESS);
    return rc;
}

/* ---- linear device memory ---- */

ROUNDTRIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    __typeof__(&cuMemAlloc_v2) real = REAL(cuMemAlloc_v2);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        device_alloc(*dptr, bytesize);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                             size_t Height, unsigned int ElementSizeBytes)
{
    __typeof__(&cuMemAllocPitch_v2) real = REAL(cuMemAllocPitch_v2);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        device_alloc(*dptr, (uint64_t)*pPitch * Height);
    return rc;
}

/* Managed memory is counted as device memory: the driver allocates it for the device and
 * cuMemGetInfo charges it there while it is resident. */
ROUNDTRIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    __typeof__(&cuMemAllocManaged) real = REAL(cuMemAllocManaged);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, flags);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        device_alloc(*dptr, bytesize);
    return rc;
}

static CUresult forward_mem_free(void *arg)
{
    __typeof__(&cuMemFree_v2) real = REAL(cuMemFree_v2);
    return real ? real(*(CUdeviceptr *)arg) : NO_DRIVER;
}

ROUNDTRIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return tracked_free(dptr, 0, forward_mem_free, &dptr);
}

/* ---- stream-ordered allocations ---- */

/* Counted on the stream's device: the memory comes from that device's current pool. */
static void async_alloc(CUresult rc, CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    roundtrim_cuda_mark_seen();
    if (rc != CUDA_SUCCESS)
        return;
    int dev = stream_device(stream);
    roundtrim_cuda_alloc_note(*dptr, bytesize, dev, 0);
    roundtrim_cuda_async_device_note(dev);
}

ROUNDTRIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    __typeof__(&cuMemAllocAsync) real = REAL(cuMemAllocAsync);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, hStream);
    async_alloc(rc, dptr, bytesize, hStream);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    __typeof__(&cuMemAllocAsync_ptsz) real = REAL(cuMemAllocAsync_ptsz);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, hStream);
    async_alloc(rc, dptr, bytesize, hStream);
    return rc;
}

/* Counted on the pool's device. A pool the process did not create (a device's default or
 * current pool) is taken to be the stream's device's, whose default pool the cleanup trims. */
static void pool_alloc(CUresult rc, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                       CUstream stream)
{
    roundtrim_cuda_mark_seen();
    if (rc != CUDA_SUCCESS)
        return;
    int dev = -1;
    bool host = false;
    bool created = roundtrim_cuda_pool_lookup((uintptr_t)pool, &dev, &host);
    if (!created)
        dev = stream_device(stream);
    roundtrim_cuda_alloc_note(*dptr, bytesize, dev, host ? ROUNDTRIM_CUDA_HOST : 0);
    if (host)
        return;
    if (created)
        roundtrim_cuda_device_note(dev);
    else
        roundtrim_cuda_async_device_note(dev);
}

ROUNDTRIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream hStream)
{
    __typeof__(&cuMemAllocFromPoolAsync) real = REAL(cuMemAllocFromPoolAsync);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, pool, hStream);
    pool_alloc(rc, dptr, bytesize, pool, hStream);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                       CUmemoryPool pool, CUstream hStream)
{
    __typeof__(&cuMemAllocFromPoolAsync_ptsz) real = REAL(cuMemAllocFromPoolAsync_ptsz);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, pool, hStream);
    pool_alloc(rc, dptr, bytesize, pool, hStream);
    return rc;
}

struct async_free_args {
    CUdeviceptr dptr;
    CUstream stream;
};

static CUresult forward_free_async(void *arg)
{
    struct async_free_args *a = arg;
    __typeof__(&cuMemFreeAsync) real = REAL(cuMemFreeAsync);
    return real ? real(a->dptr, a->stream) : NO_DRIVER;
}

static CUresult forward_free_async_ptsz(void *arg)
{
    struct async_free_args *a = arg;
    __typeof__(&cuMemFreeAsync_ptsz) real = REAL(cuMemFreeAsync_ptsz);
    return real ? real(a->dptr, a->stream) : NO_DRIVER;
}

/* Counted as freed when the call is made: the bytes go back to the pool in stream order. */
ROUNDTRIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    struct async_free_args a = {dptr, hStream};
    return tracked_free(dptr, 0, forward_free_async, &a);
}

ROUNDTRIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    struct async_free_args a = {dptr, hStream};
    return tracked_free(dptr, 0, forward_free_async_ptsz, &a);
}

/* ---- virtual memory management (PyTorch expandable segments) ---- */

/* Physical memory is counted at cuMemCreate, keyed by its handle, and freed when the handle is
 * released and no longer mapped: cuMemRelease of a mapped handle leaves the memory alive until its
 * last cuMemUnmap (the driver frees it then). cuMemMap/cuMemUnmap are followed for that only. */
ROUNDTRIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                      const CUmemAllocationProp *prop, unsigned long long flags)
{
    __typeof__(&cuMemCreate) real = REAL(cuMemCreate);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(handle, size, prop, flags);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS) {
        bool host = false;
        int dev = prop ? location_device(&prop->location, &host) : -1;
        roundtrim_cuda_alloc_note(*handle, size, dev,
                                  ROUNDTRIM_CUDA_HANDLE | (host ? ROUNDTRIM_CUDA_HOST : 0));
        roundtrim_cuda_device_note(dev);
    }
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    __typeof__(&cuMemRelease) real = REAL(cuMemRelease);
    if (!real)
        return NO_DRIVER;
    struct roundtrim_cuda_release r;
    roundtrim_cuda_release_begin(handle, &r);
    CUresult rc = real(handle);
    roundtrim_cuda_mark_seen();
    roundtrim_cuda_release_end(&r, rc == CUDA_SUCCESS);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                   CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    __typeof__(&cuMemMap) real = REAL(cuMemMap);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(ptr, size, offset, handle, flags);
    if (rc == CUDA_SUCCESS)
        roundtrim_cuda_map_note(ptr, size, handle);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    __typeof__(&cuMemUnmap) real = REAL(cuMemUnmap);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(ptr, size);
    if (rc == CUDA_SUCCESS)
        roundtrim_cuda_unmap_note(ptr, size);
    return rc;
}

/* ---- pinned host memory: counted apart, never in the cuda_* device counters ---- */

ROUNDTRIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    __typeof__(&cuMemHostAlloc) real = REAL(cuMemHostAlloc);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(pp, bytesize, Flags);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        roundtrim_cuda_alloc_note((uintptr_t)*pp, bytesize, -1, ROUNDTRIM_CUDA_HOST);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    __typeof__(&cuMemAllocHost_v2) real = REAL(cuMemAllocHost_v2);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(pp, bytesize);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        roundtrim_cuda_alloc_note((uintptr_t)*pp, bytesize, -1, ROUNDTRIM_CUDA_HOST);
    return rc;
}

static CUresult forward_free_host(void *arg)
{
    __typeof__(&cuMemFreeHost) real = REAL(cuMemFreeHost);
    return real ? real(arg) : NO_DRIVER;
}

ROUNDTRIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    return tracked_free((uintptr_t)p, 0, forward_free_host, p);
}

/* ---- pools ---- */

ROUNDTRIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    __typeof__(&cuMemPoolCreate) real = REAL(cuMemPoolCreate);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(pool, poolProps);
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS && poolProps) {
        bool host = false;
        int dev = location_device(&poolProps->location, &host);
        roundtrim_cuda_pool_note((uintptr_t)*pool, dev, host);
        roundtrim_cuda_device_note(dev);
    }
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    __typeof__(&cuMemPoolDestroy) real = REAL(cuMemPoolDestroy);
    if (!real)
        return NO_DRIVER;
    int dev = -1;
    bool host = false;
    /* Forgotten first (and waits for a trim in flight) so that no trim touches a dead pool. */
    bool known = roundtrim_cuda_pool_forget((uintptr_t)pool, &dev, &host);
    CUresult rc = real(pool);
    if (known && rc != CUDA_SUCCESS)
        roundtrim_cuda_pool_note((uintptr_t)pool, dev, host);
    return rc;
}

/* ---- stream capture: the trim must not synchronize while one is active ---- */

/* A capture counts from before the driver starts it (the driver captures from inside the call
 * on), so that a cleanup never synchronizes in that window; a refused begin is taken back. */
static void capture_beginning(void)
{
    roundtrim_cuda_capture_change(+1);
}

static void capture_begun(CUresult rc)
{
    if (rc != CUDA_SUCCESS)
        roundtrim_cuda_capture_change(-1);
}

/* A capture ends with success or with one of the capture errors (900..908: invalidated,
 * unjoined...); any other error (a stream that was not capturing) changes nothing. */
static void capture_ended(CUresult rc)
{
    if (rc == CUDA_SUCCESS || (rc >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
                               rc <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD))
        roundtrim_cuda_capture_change(-1);
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCapture(CUstream hStream)
{
    __typeof__(&cuStreamBeginCapture) real = REAL(cuStreamBeginCapture);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    __typeof__(&cuStreamBeginCapture_ptsz) real = REAL(cuStreamBeginCapture_ptsz);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    __typeof__(&cuStreamBeginCapture_v2) real = REAL(cuStreamBeginCapture_v2);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream, mode);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    __typeof__(&cuStreamBeginCapture_v2_ptsz) real = REAL(cuStreamBeginCapture_v2_ptsz);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream, mode);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                      const CUgraphNode *dependencies,
                                                      const CUgraphEdgeData *dependencyData,
                                                      size_t numDependencies,
                                                      CUstreamCaptureMode mode)
{
    __typeof__(&cuStreamBeginCaptureToGraph) real = REAL(cuStreamBeginCaptureToGraph);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                           const CUgraphNode *dependencies,
                                                           const CUgraphEdgeData *dependencyData,
                                                           size_t numDependencies,
                                                           CUstreamCaptureMode mode)
{
    __typeof__(&cuStreamBeginCaptureToGraph_ptsz) real = REAL(cuStreamBeginCaptureToGraph_ptsz);
    if (!real)
        return NO_DRIVER;
    capture_beginning();
    CUresult rc = real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode);
    capture_begun(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    __typeof__(&cuStreamEndCapture) real = REAL(cuStreamEndCapture);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(hStream, phGraph);
    capture_ended(rc);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    __typeof__(&cuStreamEndCapture_ptsz) real = REAL(cuStreamEndCapture_ptsz);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(hStream, phGraph);
    capture_ended(rc);
    return rc;
}

/* ---- cuGetProcAddress: where libcudart gets every other entry point ---- */

/* Which wrapper a request selects: for a name, the variant with the highest "since" not above the
 * requested version, among the per-thread-stream ones when the request has that flag (the driver
 * falls back to the plain variant when a name has none). From the PFN_<name>_v<since>[_ptsz]
 * typedefs of cudaTypedefs.h (CUDA 13.0); variants older than the first listed (the 32-bit
 * cuMemAlloc of 2000...) are not wrapped. */
#define TABLE_VERSION 13000 /* newest cudaTypedefs.h the table was checked against */

static const struct variant {
    const char *name;
    int since;
    bool per_thread;
    enum entry_id id;
} variants[] = {
    {"cuMemAlloc", 3020, false, ID_cuMemAlloc_v2},
    {"cuMemAllocPitch", 3020, false, ID_cuMemAllocPitch_v2},
    {"cuMemFree", 3020, false, ID_cuMemFree_v2},
    {"cuMemAllocHost", 3020, false, ID_cuMemAllocHost_v2},
    {"cuMemFreeHost", 2000, false, ID_cuMemFreeHost},
    {"cuMemHostAlloc", 2020, false, ID_cuMemHostAlloc},
    {"cuMemAllocManaged", 6000, false, ID_cuMemAllocManaged},
    {"cuMemCreate", 10020, false, ID_cuMemCreate},
    {"cuMemRelease", 10020, false, ID_cuMemRelease},
    {"cuMemMap", 10020, false, ID_cuMemMap},
    {"cuMemUnmap", 10020, false, ID_cuMemUnmap},
    {"cuMemAllocAsync", 11020, false, ID_cuMemAllocAsync},
    {"cuMemAllocAsync", 11020, true, ID_cuMemAllocAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, false, ID_cuMemAllocFromPoolAsync},
    {"cuMemAllocFromPoolAsync", 11020, true, ID_cuMemAllocFromPoolAsync_ptsz},
    {"cuMemFreeAsync", 11020, false, ID_cuMemFreeAsync},
    {"cuMemFreeAsync", 11020, true, ID_cuMemFreeAsync_ptsz},
    {"cuMemPoolCreate", 11020, false, ID_cuMemPoolCreate},
    {"cuMemPoolDestroy", 11020, false, ID_cuMemPoolDestroy},
    {"cuStreamBeginCapture", 10000, false, ID_cuStreamBeginCapture},
    {"cuStreamBeginCapture", 10000, true, ID_cuStreamBeginCapture_ptsz},
    {"cuStreamBeginCapture", 10010, false, ID_cuStreamBeginCapture_v2},
    {"cuStreamBeginCapture", 10010, true, ID_cuStreamBeginCapture_v2_ptsz},
    {"cuStreamBeginCaptureToGraph", 12030, false, ID_cuStreamBeginCaptureToGraph},
    {"cuStreamBeginCaptureToGraph", 12030, true, ID_cuStreamBeginCaptureToGraph_ptsz},
    {"cuStreamEndCapture", 10000, false, ID_cuStreamEndCapture},
    {"cuStreamEndCapture", 10000, true, ID_cuStreamEndCapture_ptsz},
    {"cuGetProcAddress", 11030, false, ID_cuGetProcAddress},
    {"cuGetProcAddress", 12000, false, ID_cuGetProcAddress_v2},
    {"cuGetProcAddress", 12000, true, ID_cuGetProcAddress_v2_ptsz},
};

/* The wrapper of the variant (name, version, per_thread) names exactly, or -1. known: whether the
 * name is one we wrap at all. */
static int variant_pick(const char *symbol, int version, bool per_thread, bool *known)
{
    const struct variant *best = NULL;
    *known = false;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const struct variant *v = &variants[i];
        if (strcmp(v->name, symbol) != 0)
            continue;
        *known = true;
        if (v->per_thread == per_thread && v->since <= version && (!best || v->since > best->since))
            best = v;
    }
    return best ? (int)best->id : -1;
}

/* The driver's export of every wrapped name, for the address match. Built once, on the first
 * lookup (it runs before cuInit, so it never initialises anything). */
static void *entry_export[ENTRY_COUNT];
static pthread_once_t entry_export_once = PTHREAD_ONCE_INIT;

static void entry_export_build(void)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *h = roundtrim_cuda_driver_handle();
    if (!rdlsym || !h)
        return;
    for (int i = 0; i < ENTRY_COUNT; i++) {
        void *p = rdlsym(h, entry_name[i]);
        entry_export[i] = is_wrapper(p) ? NULL : p;
    }
}

static int export_match(const void *p)
{
    pthread_once(&entry_export_once, entry_export_build);
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (entry_export[i] == p)
            return i;
    return -1;
}

/* The real lookup a wrapper forwarded to, so that the decision can ask the driver again. */
struct lookup {
    enum entry_id form; /* ID_cuGetProcAddress: the 4-argument form */
    void *real;
};

static void *lookup_again(const struct lookup *l, const char *symbol, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CUresult rc =
        l->form == ID_cuGetProcAddress
            ? ((__typeof__(&cuGetProcAddress))l->real)(symbol, &p, version, flags)
            : ((__typeof__(&cuGetProcAddress_v2))l->real)(symbol, &p, version, flags, &status);
    return rc == CUDA_SUCCESS ? p : NULL;
}

/* The wrapper to hand out for the driver's answer p to (symbol, version, flags), or p itself.
 * Where the table alone could be wrong, the driver is asked again: a per-thread request is the
 * _ptsz variant only if the driver answers it differently from the plain one (for names without
 * one, and for cuGetProcAddress, it may not), and a version newer than the table is trusted only
 * if the driver gives the same answer at the table's version (a newer _vN would differ). */
static void *substitute(const struct lookup *l, const char *symbol, int version, cuuint64_t flags,
                        void *p)
{
    if (!p || !symbol || is_wrapper(p))
        return p;
    bool known, per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int v = version < TABLE_VERSION ? version : TABLE_VERSION;
    int id = variant_pick(symbol, v, false, &known);
    if (known && per_thread &&
        lookup_again(l, symbol, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != p)
        id = variant_pick(symbol, v, true, &known);
    if (id >= 0 && version > TABLE_VERSION && lookup_again(l, symbol, TABLE_VERSION, flags) != p)
        id = -1;
    int by_address = export_match(p);
    if (by_address >= 0)
        id = by_address; /* the driver's own export names its variant */
    if (id < 0)
        return p;
    note_real((enum entry_id)id, p);
    return entry_wrapper[id];
}

static CUresult lookup_v2(enum entry_id form, const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    struct lookup l = {form, real_fn(form)};
    if (!l.real && form == ID_cuGetProcAddress_v2_ptsz) /* drivers that do not export it */
        l = (struct lookup){ID_cuGetProcAddress_v2, real_fn(ID_cuGetProcAddress_v2)};
    if (!l.real)
        return NO_DRIVER;
    CUresult rc =
        ((__typeof__(&cuGetProcAddress_v2))l.real)(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute(&l, symbol, cudaVersion, flags, *pfn);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup_v2(ID_cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* What cuda.h's per-thread-default-stream builds call: a request naming neither stream flavour
 * means per-thread. The flag is made explicit before the driver sees it, so the decision above and
 * the driver's answer agree whichever implementation the driver gave for this entry point. */
ROUNDTRIM_EXPORT CUresult cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!(flags &
          (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return lookup_v2(ID_cuGetProcAddress_v2_ptsz, symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3-11.8 form, without the status out-parameter. */
ROUNDTRIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                           cuuint64_t flags)
{
    struct lookup l = {ID_cuGetProcAddress, real_fn(ID_cuGetProcAddress)};
    if (!l.real)
        return NO_DRIVER;
    CUresult rc = ((__typeof__(&cuGetProcAddress))l.real)(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute(&l, symbol, cudaVersion, flags, *pfn);
    return rc;
}

/* ---- dlsym on the driver's handle ---- */

static int entry_find(const char *name)
{
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (strcmp(entry_name[i], name) == 0)
            return i;
    return -1;
}

/* Only a lookup in the very driver object this process loaded as libcuda.so.1 gets a wrapper, and
 * only when the caller is not that driver itself: a driver that looks itself up, or a loader stub
 * that looks up the driver it loads (WSL2's libcuda.so.1 loads another libcuda file), keeps its
 * own pointers, or every call would come back through our wrapper and the wrapper call itself.
 * Another library that happens to export a cu* name (a vGPU layer, a stub) keeps its own too. */
void *roundtrim_cuda_dlsym_substitute(void *handle, const char *name, const void *caller)
{
    int id = entry_find(name);
    if (id < 0)
        return NULL;
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *driver = roundtrim_cuda_driver_handle();
    if (!rdlsym || !driver || handle != driver)
        return NULL;
    Dl_info info;
    struct link_map *caller_map = NULL;
    if (caller && dladdr1(caller, &info, (void **)&caller_map, RTLD_DL_LINKMAP) &&
        (void *)caller_map == driver)
        return NULL;
    void *p = rdlsym(handle, name);
    if (!p || is_wrapper(p))
        return NULL; /* forwarded: the real dlsym gives the same answer to the caller */
    /* Whatever the lookup found (the driver's export, or another interposer's hook in front of
     * it) becomes the next function after our wrapper. */
    note_real((enum entry_id)id, p);
    return entry_wrapper[id];
}
