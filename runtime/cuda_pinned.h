/* Pinned host memory allocated through the driver (cuMemHostAlloc, cuMemAllocHost, host-located
 * pools and cuMemCreate on a host location). Counted apart: the cuda_* round keys are device
 * memory only, and these bytes already show in the process's RSS. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_PINNED_H
#define ROUNDTRIM_RUNTIME_CUDA_PINNED_H

#include <stdbool.h>
#include <stdint.h>

struct roundtrim_cuda_pinned {
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes; /* this round */
    uint64_t live_bytes;                                       /* now */
};

/* Takes this round's pinned-host counters (and resets them); false when the driver was never
 * seen. Call it next to roundtrim_cuda_round_take(). */
bool roundtrim_cuda_pinned_take(struct roundtrim_cuda_pinned *out);

#endif
