/* The release of the driver's cached pools, on the worker thread (the cleanup's
 * cuda_pool_trim). */
#ifndef ROUNDTRIM_RUNTIME_CUDA_RELEASE_H
#define ROUNDTRIM_RUNTIME_CUDA_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

/* Trims to zero every stream-ordered pool the process used, each device's inside its primary
 * context: the default pools of devices that allocated stream-ordered memory, and the created
 * pools. Returns NULL when it trimmed, else why not: "cuda_capture", "no_driver_entry",
 * "no_context", or ROUNDTRIM_NOTHING_TO_DO (no stream-ordered memory). */
const char *roundtrim_cuda_pool_trim(uint64_t *released_bytes);

#endif
