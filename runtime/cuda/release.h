/* The release of the driver's cached pools, on the worker thread (the cleanup's
 * cuda_pool_trim). */
#ifndef ROUNDTRIM_RUNTIME_CUDA_RELEASE_H
#define ROUNDTRIM_RUNTIME_CUDA_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

/* Trims to zero every stream-ordered pool the process used, each device's inside its primary
 * context: the default pools of devices that allocated stream-ordered memory, and the created
 * pools. Returns false when nothing was trimmed; roundtrim_cuda_pool_trim_skipped() then says
 * why when that is news ("cuda_capture", "no_context"), NULL when there was nothing to trim. */
bool roundtrim_cuda_pool_trim(uint64_t *released_bytes);
const char *roundtrim_cuda_pool_trim_skipped(void);

#endif
