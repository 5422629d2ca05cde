/* The few CUDA driver types and constants roundtrim needs, declared here so that the library
 * builds without the CUDA toolkit. They follow the driver's ABI (cuda.h of CUDA 12/13, 64-bit).
 *
 * With ROUNDTRIM_CUDA_TOOLKIT_CHECK defined, the toolkit's own cuda.h is used instead: compiling
 * shim/cuda_hooks.c that way (with __CUDA_API_VERSION_INTERNAL, which makes cuda.h declare every
 * exported variant) lets the compiler check each wrapper against the driver's prototype. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_TYPES_H
#define ROUNDTRIM_RUNTIME_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef ROUNDTRIM_CUDA_TOOLKIT_CHECK
#include <cuda.h>
#else

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphEdgeData_st CUgraphEdgeData; /* only passed through */
typedef int CUstreamCaptureMode;
typedef int CUdriverProcAddressQueryResult;
typedef int CUmemPool_attribute;

typedef struct CUmemLocation_st {
    int type; /* CUmemLocationType */
    int id;
} CUmemLocation;

/* Only the leading members are read; the driver's struct is larger and is passed by pointer. */
typedef struct CUmemAllocationProp_st {
    int type;
    int requestedHandleTypes;
    CUmemLocation location;
} CUmemAllocationProp;

typedef struct CUmemPoolProps_st {
    int allocType;
    int handleTypes;
    CUmemLocation location;
} CUmemPoolProps;

#define CUDA_SUCCESS                                  0
#define CUDA_ERROR_INVALID_VALUE                      1
#define CUDA_ERROR_OUT_OF_MEMORY                      2
#define CUDA_ERROR_NOT_INITIALIZED                    3
#define CUDA_ERROR_INVALID_CONTEXT                    201
#define CUDA_ERROR_NOT_FOUND                          500
#define CUDA_ERROR_NOT_SUPPORTED                      801
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED         900
#define CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD        908
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM             (1 << 0)
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (1 << 1)
#define CU_GET_PROC_ADDRESS_SUCCESS                   0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND          1
#define CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT    2
#define CU_MEM_LOCATION_TYPE_DEVICE                   1
#define CU_MEM_LOCATION_TYPE_HOST                     2
#define CU_MEM_LOCATION_TYPE_HOST_NUMA                3
#define CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT        4
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD             4
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT          5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT              7

#endif /* ROUNDTRIM_CUDA_TOOLKIT_CHECK */
#endif
