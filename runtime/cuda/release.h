/* The release of the driver's cached pools, on the worker thread (the cleanup's
 * cuda_pool_trim). */
#ifndef ROUNDTRIM_RUNTIME_CUDA_RELEASE_H
#define ROUNDTRIM_RUNTIME_CUDA_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* Trims to zero every stream-ordered pool the process used, each device's inside its primary
 * context: the default pools of devices that allocated stream-ordered memory, and the created
 * pools. Returns RT_SKIP_NONE when it trimmed, else why not: cuda_capture, no_driver_entry,
 * no_context, or RT_SKIP_NOTHING_TO_DO (no stream-ordered memory). */
enum roundtrim_skip roundtrim_cuda_pool_trim(uint64_t *released_bytes);

/* Device memory the driver's stream-ordered pools keep reserved beyond what is allocated from
 * them (what a trim gives back), read from the pools' attributes without entering a context.
 * RT_SKIP_NONE when read (0 without stream-ordered memory), else why not (no_cuda, ...). */
enum roundtrim_skip roundtrim_cuda_pool_cached(uint64_t *cached);

/* Device memory the process holds from the driver now: the blocks it allocated outside the
 * stream-ordered pools, and what the pools keep reserved (allocated from or not). What a
 * release of caches lowers, whichever allocator PyTorch uses. */
uint64_t roundtrim_cuda_device_held(void);

#endif
