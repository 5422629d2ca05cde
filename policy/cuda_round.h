/* A round's device memory as the driver hooks saw it: the round record's cuda_* keys. */
#ifndef ROUNDTRIM_POLICY_CUDA_ROUND_H
#define ROUNDTRIM_POLICY_CUDA_ROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* Device memory as seen by the driver hooks. present is false when the driver was never seen. */
struct roundtrim_cuda_round {
    bool present;
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes;
    uint64_t live_bytes, peak_bytes;
    bool have_mem_info;
    uint64_t free_mem, total_mem;
    enum roundtrim_skip mem_info_skipped; /* why free/total are missing: no_context, ... */
    /* Pinned host memory allocated through the driver: in RSS already, so counted apart. */
    uint64_t host_alloc_calls, host_alloc_bytes, host_free_calls, host_free_bytes;
    uint64_t host_live_bytes;
};

#endif
