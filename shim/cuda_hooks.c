/* CUDA driver entry points: each exported wrapper has exactly the driver's signature, forwards to
 * the real driver and tells runtime/cuda_track.c what happened.
 *
 * Programs reach the driver three ways, and all three end here:
 *  - linked with -lcuda: the dynamic linker binds their calls to these exports (we are preloaded);
 *  - dlopen("libcuda.so.1") + dlsym: the dlsym hook hands out these wrappers (shim/dlsym_hook.c);
 *  - cuGetProcAddress*: the wrappers below map the pointer the driver returns back to the exported
 *    name it is and hand out the wrapper of exactly that variant (_v2, _ptsz included).
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cuda_account.h"
#include "runtime/export.h"
#include "shim/cuda_driver.h"
#include "shim/cuda_types.h"

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
    X(cuGetProcAddress_v2)

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

/* The driver's implementation behind each wrapper, found lazily. */
static _Atomic(void *) entry_real[ENTRY_COUNT];

/* Handle of the loaded driver library (dlopen with RTLD_NOLOAD, so never a load of our own). */
static _Atomic(void *) driver_handle;

/* ---- finding the driver ---- */

static void *driver_handle_get(void)
{
    void *h = atomic_load_explicit(&driver_handle, memory_order_acquire);
    if (h)
        return h;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) {
        /* The process may have loaded the driver under another name: find it from a pointer. */
        for (int i = 0; i < ENTRY_COUNT && !h; i++) {
            Dl_info info;
            void *p = atomic_load_explicit(&entry_real[i], memory_order_acquire);
            if (p && dladdr(p, &info) && info.dli_fname)
                h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        }
    }
    if (!h)
        return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&driver_handle, &expected, h))
        dlclose(h); /* another thread won: drop our extra reference */
    return atomic_load_explicit(&driver_handle, memory_order_acquire);
}

void *roundtrim_cuda_driver_sym(const char *name)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *h = driver_handle_get();
    return rdlsym && h ? rdlsym(h, name) : NULL;
}

static void note_real(enum entry_id id, void *p)
{
    void *expected = NULL;
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
        void *h = driver_handle_get();
        p = h ? rdlsym(h, entry_name[id]) : NULL;
    }
    if (!p || p == entry_wrapper[id])
        return NULL;
    note_real(id, p);
    return atomic_load_explicit(&entry_real[id], memory_order_acquire);
}

static inline void *real_fn(enum entry_id id)
{
    void *p = atomic_load_explicit(&entry_real[id], memory_order_acquire);
    return p ? p : resolve_real(id);
}

/* The real function, with the wrapper's own type: the wrapper's signature is the driver's. */
#define REAL(name) ((__typeof__(&name))real_fn(ID_##name))

/* Returned when a wrapper is called in a process with no driver (dlsym(RTLD_DEFAULT, ...) finds
 * our exports even then). */
#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

/* ---- small driver helpers (no lock of ours is held while they run) ---- */

typedef CUresult (*ctx_get_device_fn)(CUdevice *);

static int current_device(void)
{
    static _Atomic(void *) fn;
    void *p = atomic_load_explicit(&fn, memory_order_acquire);
    if (!p) {
        p = roundtrim_cuda_driver_sym("cuCtxGetDevice");
        if (!p)
            return -1;
        atomic_store_explicit(&fn, p, memory_order_release);
    }
    CUdevice dev;
    return ((ctx_get_device_fn)p)(&dev) == CUDA_SUCCESS ? dev : -1;
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

static void async_alloc(CUresult rc, CUdeviceptr *dptr, size_t bytesize)
{
    roundtrim_cuda_mark_seen();
    if (rc == CUDA_SUCCESS)
        device_alloc(*dptr, bytesize); /* from the current device's current pool */
}

ROUNDTRIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    __typeof__(&cuMemAllocAsync) real = REAL(cuMemAllocAsync);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, hStream);
    async_alloc(rc, dptr, bytesize);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    __typeof__(&cuMemAllocAsync_ptsz) real = REAL(cuMemAllocAsync_ptsz);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, hStream);
    async_alloc(rc, dptr, bytesize);
    return rc;
}

static void pool_alloc(CUresult rc, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool)
{
    roundtrim_cuda_mark_seen();
    if (rc != CUDA_SUCCESS)
        return;
    int dev = -1;
    bool host = false;
    if (!roundtrim_cuda_pool_lookup((uintptr_t)pool, &dev, &host))
        dev = current_device(); /* a default or imported pool */
    roundtrim_cuda_alloc_note(*dptr, bytesize, dev, host ? ROUNDTRIM_CUDA_HOST : 0);
    if (!host)
        roundtrim_cuda_device_note(dev);
}

ROUNDTRIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream hStream)
{
    __typeof__(&cuMemAllocFromPoolAsync) real = REAL(cuMemAllocFromPoolAsync);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, pool, hStream);
    pool_alloc(rc, dptr, bytesize, pool);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                       CUmemoryPool pool, CUstream hStream)
{
    __typeof__(&cuMemAllocFromPoolAsync_ptsz) real = REAL(cuMemAllocFromPoolAsync_ptsz);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(dptr, bytesize, pool, hStream);
    pool_alloc(rc, dptr, bytesize, pool);
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

/* Physical memory is counted at cuMemCreate, keyed by its handle; cuMemMap/cuMemUnmap only move
 * it in the address space. */
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

static CUresult forward_mem_release(void *arg)
{
    __typeof__(&cuMemRelease) real = REAL(cuMemRelease);
    return real ? real(*(CUmemGenericAllocationHandle *)arg) : NO_DRIVER;
}

ROUNDTRIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    return tracked_free(handle, ROUNDTRIM_CUDA_HANDLE, forward_mem_release, &handle);
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

/* The driver's export of every wrapped name, to recognise what cuGetProcAddress returns. Built
 * once, on the first lookup (it runs before cuInit, so it never initialises anything). */
static void *entry_export[ENTRY_COUNT];
static pthread_once_t entry_export_once = PTHREAD_ONCE_INIT;

static void entry_export_build(void)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *h = driver_handle_get();
    if (!rdlsym || !h)
        return;
    for (int i = 0; i < ENTRY_COUNT; i++) {
        void *p = rdlsym(h, entry_name[i]);
        entry_export[i] = p == entry_wrapper[i] ? NULL : p;
    }
}

/* Our wrapper for a pointer the driver handed out, or the pointer itself when it is not one of
 * the exports we wrap (an unknown entry point, a legacy ABI variant, a newer _vN): matching by
 * address rather than by the requested name keeps the exact variant the driver chose for the
 * caller's version and flags. */
static void *substitute_pointer(void *p)
{
    if (!p)
        return p;
    pthread_once(&entry_export_once, entry_export_build);
    for (int i = 0; i < ENTRY_COUNT; i++) {
        if (entry_export[i] == p) {
            note_real((enum entry_id)i, p);
            return entry_wrapper[i];
        }
    }
    return p;
}

ROUNDTRIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbolStatus)
{
    __typeof__(&cuGetProcAddress_v2) real = REAL(cuGetProcAddress_v2);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute_pointer(*pfn);
    return rc;
}

/* The CUDA 11.3-11.8 form, without the status out-parameter. */
ROUNDTRIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                           cuuint64_t flags)
{
    __typeof__(&cuGetProcAddress) real = REAL(cuGetProcAddress);
    if (!real)
        return NO_DRIVER;
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute_pointer(*pfn);
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

/* Only lookups that land in the driver library get a wrapper: another library that happens to
 * export a cu* name (a vGPU layer, a stub) keeps its own. */
static bool in_driver_library(void *p)
{
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return false;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libcuda.so", 10) == 0;
}

void *roundtrim_cuda_dlsym_substitute(void *handle, const char *name)
{
    int id = entry_find(name);
    if (id < 0)
        return NULL;
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    if (!rdlsym)
        return NULL;
    void *p = rdlsym(handle, name);
    if (!p || p == entry_wrapper[id] || !in_driver_library(p))
        return NULL; /* forwarded: the real dlsym gives the same answer to the caller */
    note_real((enum entry_id)id, p);
    return entry_wrapper[id];
}
