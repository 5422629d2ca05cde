/* The real CUDA driver as roundtrim reaches it: the library object the process loaded, and one
 * table of the driver entry points roundtrim calls, shared by the driver hooks (shim/) and by
 * roundtrim's own threads (runtime/cuda/). Never loads or initialises the driver.
 *
 * Each entry holds a real function, never one of roundtrim's wrappers: what the process would
 * have reached without roundtrim (the driver, or another interposer loaded after it). An entry is
 * resolved on its first use that finds it, and kept; until then every use tries again (a process
 * may dlopen the driver late), with no lock of ours. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_DRIVER_H
#define ROUNDTRIM_RUNTIME_CUDA_DRIVER_H

#include <stdint.h>

#include "runtime/cuda/types.h"

/* The entry points roundtrim wraps (exports of its own, by the same names): the memory and
 * capture calls (shim/cuda_hooks.c), then the lookups (shim/cuda_resolve.c). */
#define ROUNDTRIM_CUDA_WRAPPED(X) ROUNDTRIM_CUDA_WRAPPED_CALLS(X) ROUNDTRIM_CUDA_WRAPPED_LOOKUPS(X)
#define ROUNDTRIM_CUDA_WRAPPED_CALLS(X)                                                            \
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
    X(cuStreamEndCapture_ptsz)
#define ROUNDTRIM_CUDA_WRAPPED_LOOKUPS(X)                                                          \
    X(cuGetProcAddress)                                                                            \
    X(cuGetProcAddress_v2)                                                                         \
    X(cuGetProcAddress_v2_ptsz)

/* The entry points only roundtrim's own code calls: the hooks' questions (which device, which
 * context) and the worker's (contexts, memory info, pool trims). Found by name in the driver's
 * own object, never through the global scope: they are never roundtrim's wrappers. */
#define ROUNDTRIM_CUDA_CALLED(X)                                                                   \
    X(cuCtxGetDevice, CUresult, (CUdevice * device))                                               \
    X(cuCtxGetCurrent, CUresult, (CUcontext * pctx))                                               \
    X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                  \
    X(cuCtxPushCurrent_v2, CUresult, (CUcontext ctx))                                              \
    X(cuCtxPopCurrent_v2, CUresult, (CUcontext * pctx))                                            \
    X(cuCtxSynchronize, CUresult, (void))                                                          \
    X(cuStreamGetDevice, CUresult, (CUstream hStream, CUdevice * device))                          \
    X(cuStreamGetCtx, CUresult, (CUstream hStream, CUcontext * pctx))                              \
    X(cuDevicePrimaryCtxGetState, CUresult, (CUdevice dev, unsigned int *flags, int *active))      \
    X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * pctx, CUdevice dev))                        \
    X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice dev))                                      \
    X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice dev))                                         \
    X(cuMemGetInfo_v2, CUresult, (size_t * free, size_t * total))                                  \
    X(cuDeviceGetDefaultMemPool, CUresult, (CUmemoryPool * pool_out, CUdevice dev))                \
    X(cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t minBytesToKeep))                       \
    X(cuMemPoolGetAttribute, CUresult, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))

/* Their prototypes, for ROUNDTRIM_CUDA_CALL's types only: never defined in roundtrim, and never
 * called by name (the link, with --no-undefined, would fail). With the toolkit check they are
 * compared with cuda.h's. */
#define ROUNDTRIM_CUDA_PROTOTYPE(name, ret, params) ret name params;
ROUNDTRIM_CUDA_CALLED(ROUNDTRIM_CUDA_PROTOTYPE)
#undef ROUNDTRIM_CUDA_PROTOTYPE

/* One id per entry: the wrapped ones first, numbered from 0 up to ROUNDTRIM_CUDA_WRAPPED_COUNT. */
#define ROUNDTRIM_CUDA_WRAPPED_ID(name)             ID_##name,
#define ROUNDTRIM_CUDA_CALLED_ID(name, ret, params) ID_##name,
enum roundtrim_cuda_entry_id {
    ROUNDTRIM_CUDA_WRAPPED(ROUNDTRIM_CUDA_WRAPPED_ID) ROUNDTRIM_CUDA_WRAPPED_COUNT,
    ROUNDTRIM_CUDA_LAST_WRAPPED = ROUNDTRIM_CUDA_WRAPPED_COUNT - 1, /* the others follow */
    ROUNDTRIM_CUDA_CALLED(ROUNDTRIM_CUDA_CALLED_ID) ROUNDTRIM_CUDA_ENTRY_COUNT
};
#undef ROUNDTRIM_CUDA_WRAPPED_ID
#undef ROUNDTRIM_CUDA_CALLED_ID

/* The exported name of an entry ("cuMemAlloc_v2"). */
const char *roundtrim_cuda_entry_name(enum roundtrim_cuda_entry_id id);

/* One entry of the table. answer: what a lookup of the program's (cuGetProcAddress, dlsym on
 * the driver's handle) answered for that exact variant, written once by the hooks, wrapped
 * entries only. found: what roundtrim's own lookup found, written once; ROUNDTRIM_CUDA_ABSENT
 * when the loaded driver does not have the entry (its exports never change). */
struct roundtrim_cuda_entry {
    void *answer;
    void *found;
};
#define ROUNDTRIM_CUDA_ABSENT ((void *)1)

__attribute__((visibility("hidden"))) extern struct roundtrim_cuda_entry
    roundtrim_cuda_entries[ROUNDTRIM_CUDA_ENTRY_COUNT];

/* The slow half of roundtrim_cuda_entry: looks the entry up. A wrapped entry is looked up after
 * roundtrim (RTLD_NEXT: the driver the program linked, or another interposer loaded after it),
 * then in the driver's object; any other only in the driver's object. ours, the wrapper of that
 * name (NULL for the others), is never taken. NULL while nothing is found. */
void *roundtrim_cuda_entry_resolve(enum roundtrim_cuda_entry_id id, const void *ours);

/* The real function behind an entry: the lookup's answer, else what roundtrim found, else
 * resolved now. NULL when the driver does not have it (or is not loaded yet). Lock-free: two
 * atomic loads once resolved. */
static inline void *roundtrim_cuda_entry(enum roundtrim_cuda_entry_id id, const void *ours)
{
    struct roundtrim_cuda_entry *e = &roundtrim_cuda_entries[id];
    void *p = __atomic_load_n(&e->answer, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    p = __atomic_load_n(&e->found, __ATOMIC_ACQUIRE);
    return (uintptr_t)p > (uintptr_t)ROUNDTRIM_CUDA_ABSENT ? p
                                                           : roundtrim_cuda_entry_resolve(id, ours);
}

/* The same for an entry only roundtrim calls, which no lookup answers: one atomic load. */
static inline void *roundtrim_cuda_entry_called(enum roundtrim_cuda_entry_id id)
{
    void *p = __atomic_load_n(&roundtrim_cuda_entries[id].found, __ATOMIC_ACQUIRE);
    return (uintptr_t)p > (uintptr_t)ROUNDTRIM_CUDA_ABSENT ? p
                                                           : roundtrim_cuda_entry_resolve(id, NULL);
}

/* A lookup's answer for exactly this wrapped entry's variant: the first one stays. The caller
 * makes sure p is not one of roundtrim's wrappers. */
void roundtrim_cuda_entry_answer(enum roundtrim_cuda_entry_id id, void *p);

/* A driver entry point roundtrim's own code calls (ROUNDTRIM_CUDA_CALLED), with its type. */
#define ROUNDTRIM_CUDA_CALL(name) ((__typeof__(&name))roundtrim_cuda_entry_called(ID_##name))

/* The driver library the process loaded (libcuda.so.1, or the object an entry point the hooks
 * resolved lives in); NULL while none is loaded. */
void *roundtrim_cuda_driver_handle(void);

#endif
