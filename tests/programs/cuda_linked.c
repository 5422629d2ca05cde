/* Reaches the driver like a program linked with -lcuda: direct calls bound by the dynamic linker
 * (to roundtrim's exports when it is preloaded). Runs the shared scenario. */
#include "cuda_common.h"

CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                     unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFreeHost(void *);
CUresult cuMemPoolCreate(CUmemoryPool *, const CUmemPoolProps *);
CUresult cuMemPoolDestroy(CUmemoryPool);
CUresult cuMemPoolGetAttribute(CUmemoryPool, CUmemPool_attribute, void *);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *, CUdevice);
CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode);
CUresult cuStreamEndCapture(CUstream, CUgraph *);

int main(void)
{
    struct cu cu = {
        .Init = cuInit,
        .DeviceGet = cuDeviceGet,
        .DevicePrimaryCtxRetain = cuDevicePrimaryCtxRetain,
        .CtxSetCurrent = cuCtxSetCurrent,
        .MemGetInfo = cuMemGetInfo_v2,
        .MemAlloc = cuMemAlloc_v2,
        .MemAllocPitch = cuMemAllocPitch_v2,
        .MemAllocManaged = cuMemAllocManaged,
        .MemFree = cuMemFree_v2,
        .MemAllocAsync = cuMemAllocAsync,
        .MemAllocFromPoolAsync = cuMemAllocFromPoolAsync,
        .MemFreeAsync = cuMemFreeAsync,
        .MemCreate = cuMemCreate,
        .MemRelease = cuMemRelease,
        .MemHostAlloc = cuMemHostAlloc,
        .MemAllocHost = cuMemAllocHost_v2,
        .MemFreeHost = cuMemFreeHost,
        .MemPoolCreate = cuMemPoolCreate,
        .MemPoolDestroy = cuMemPoolDestroy,
        .MemPoolGetAttribute = cuMemPoolGetAttribute,
        .DeviceGetDefaultMemPool = cuDeviceGetDefaultMemPool,
        .StreamBeginCapture = cuStreamBeginCapture_v2,
        .StreamEndCapture = cuStreamEndCapture,
    };
    setvbuf(stdout, NULL, _IOLBF, 0);
    cu_start(&cu);
    scenario(&cu);
    return 0;
}
