/* CUDA driver entry points: each exported wrapper has exactly the driver's signature, forwards to
 * the real driver (its entry in runtime/cuda/driver.h's table) and tells the device-memory
 * accounting (runtime/cuda/account.h) what happened. How programs reach these wrappers (linked,
 * dlsym on the driver's handle, cuGetProcAddress) and how the real function behind each is found
 * is shim/cuda_resolve.c's part.
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
#include <stdbool.h>
#include <stdint.h>

#include "runtime/cuda/account.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"
#include "shim/cuda_resolve.h"

/* ---- small driver helpers (no lock of ours is held while they run) ---- */

static int current_device(void)
{
    __typeof__(&cuCtxGetDevice) get = ROUNDTRIM_CUDA_CALL(cuCtxGetDevice);
    CUdevice dev;
    return get && get(&dev) == CUDA_SUCCESS ? dev : -1;
}

/* The device of a stream: stream-ordered memory comes from that device's pool, whichever context
 * is current. cuStreamGetDevice (CUDA 12.8) answers directly; before it, the stream's context
 * is asked for its device (made current for that one question when it is not already). */
static int stream_device(CUstream stream)
{
    __typeof__(&cuStreamGetDevice) get_device = ROUNDTRIM_CUDA_CALL(cuStreamGetDevice);
    CUdevice dev;
    if (get_device && get_device(stream, &dev) == CUDA_SUCCESS)
        return dev;
    __typeof__(&cuStreamGetCtx) get_ctx = ROUNDTRIM_CUDA_CALL(cuStreamGetCtx);
    __typeof__(&cuCtxGetCurrent) get_current = ROUNDTRIM_CUDA_CALL(cuCtxGetCurrent);
    CUcontext ctx = NULL, cur = NULL;
    if (!get_ctx || !get_current || get_ctx(stream, &ctx) != CUDA_SUCCESS || !ctx ||
        get_current(&cur) != CUDA_SUCCESS || ctx == cur)
        return current_device();
    __typeof__(&cuCtxPushCurrent_v2) push = ROUNDTRIM_CUDA_CALL(cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = ROUNDTRIM_CUDA_CALL(cuCtxPopCurrent_v2);
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

/* ---- the variants cuGetProcAddress selects (shim/cuda_resolve.c decides) ---- */

/* Which wrapper a request selects: for a name, the variant with the highest "since" not above the
 * requested version, among the per-thread-stream ones when the request has that flag (the driver
 * falls back to the plain variant when a name has none). From the PFN_<name>_v<since>[_ptsz]
 * typedefs of cudaTypedefs.h (CUDA 13.0: ROUNDTRIM_CUDA_VARIANTS_VERSION); variants older than the
 * first listed (the 32-bit cuMemAlloc of 2000...) are not wrapped. */
const struct roundtrim_cuda_variant roundtrim_cuda_variants[] = {
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
const size_t roundtrim_cuda_variant_count =
    sizeof roundtrim_cuda_variants / sizeof roundtrim_cuda_variants[0];

/* The hidden aliases of shim/cuda_resolve.h for the wrappers defined here. */
ROUNDTRIM_CUDA_WRAPPED_CALLS(ROUNDTRIM_CUDA_OWN_DEFINE)
