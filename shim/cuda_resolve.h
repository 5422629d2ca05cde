/* Between the CUDA driver wrappers (shim/cuda_hooks.c) and the resolver that hands them out
 * (shim/cuda_resolve.c: cuGetProcAddress and dlsym on the driver's handle). The real function
 * behind each wrapper is in the entry table of runtime/cuda/driver.h. */
#ifndef ROUNDTRIM_SHIM_CUDA_RESOLVE_H
#define ROUNDTRIM_SHIM_CUDA_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/core/export.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"

/* The wrappers' prototypes: exactly the driver's (checked against cuda.h, see types.h). One per
 * entry of ROUNDTRIM_CUDA_WRAPPED. */
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

/* Each wrapper's own address: a hidden alias of it, defined beside it (shim/cuda_hooks.c), is
 * fixed when the library is linked. Taken by the exported name, each would be a symbol the loader
 * looks up while relocating the library, at the start of every process (two lookups per entry
 * point, some 20,000 instructions in all). */
#define ROUNDTRIM_CUDA_OWN(name) roundtrim_own_##name
#define ROUNDTRIM_CUDA_OWN_DECLARE(name)                                                           \
    extern __typeof__(name) ROUNDTRIM_CUDA_OWN(name) __attribute__((visibility("hidden")));
ROUNDTRIM_CUDA_WRAPPED(ROUNDTRIM_CUDA_OWN_DECLARE)
/* Defines the alias, in the file that defines the wrapper (an alias must be beside its target). */
#define ROUNDTRIM_CUDA_OWN_DEFINE(name)                                                            \
    extern __typeof__(name) ROUNDTRIM_CUDA_OWN(name) __attribute__((alias(#name)));

/* The real function behind the wrapper name, with the wrapper's own type (the wrapper's signature
 * is the driver's); never the wrapper itself. */
#define REAL(name)                                                                                 \
    ((__typeof__(&name))roundtrim_cuda_entry(ID_##name, (const void *)ROUNDTRIM_CUDA_OWN(name)))

/* Returned when a wrapper is called in a process with no driver (dlsym(RTLD_DEFAULT, ...) finds
 * our exports even then). */
#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

/* A variant of a driver entry point, as cuGetProcAddress names it: the PFN_<name>_v<since>[_ptsz]
 * typedefs of cudaTypedefs.h, and the wrapper of that exact ABI. The table
 * (roundtrim_cuda_variants, in shim/cuda_hooks.c beside the wrappers it names) lists every
 * variant of the names wrapped, as of cudaTypedefs.h of CUDA ROUNDTRIM_CUDA_VARIANTS_VERSION. */
struct roundtrim_cuda_variant {
    const char *name;
    int since;
    bool per_thread;
    enum roundtrim_cuda_entry_id id;
};
#define ROUNDTRIM_CUDA_VARIANTS_VERSION 13000
extern const struct roundtrim_cuda_variant roundtrim_cuda_variants[];
extern const size_t roundtrim_cuda_variant_count;

#endif
