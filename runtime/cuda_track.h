/* Device-memory accounting fed by the driver hooks in shim/, and the release of cached pools. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_TRACK_H
#define ROUNDTRIM_RUNTIME_CUDA_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/round_record.h"

/* Takes this round's device counters and resets the per-round ones (peak starts again from the
 * live bytes). Returns false, leaving out->present false, when the driver was never seen. */
bool roundtrim_cuda_round_take(struct roundtrim_cuda_round *out);

/* Trims every stream-ordered pool the process used to zero. Returns false when there was none. */
bool roundtrim_cuda_pool_trim(uint64_t *released_bytes);

/* Whether a stream capture is active anywhere in the process (counted by the driver hooks): no
 * device synchronize, pool trim or torch.cuda.empty_cache() may run then. */
bool roundtrim_cuda_capture_active(void);

/* Forgets the parent's state in a fork child. */
void roundtrim_cuda_fork_child(void);

#endif
