/* A round's CUDA figures: the accounting's counts over the round, and the driver's own view of
 * the devices' memory, read on the worker thread when the round is recorded. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_ROUND_FILL_H
#define ROUNDTRIM_RUNTIME_CUDA_ROUND_FILL_H

#include <stdbool.h>

#include "policy/cuda_round.h"
#include "runtime/cuda/account.h"

/* A round's device and pinned-host figures, from the snapshots at its two ends, plus, with
 * ask_driver, the driver's free and total memory read now. Returns false, leaving out->present
 * false, when the driver had not been seen at the round's end. */
bool roundtrim_cuda_round_fill(struct roundtrim_cuda_round *out,
                               const struct roundtrim_cuda_counts *now,
                               const struct roundtrim_cuda_counts *before, bool ask_driver);

#endif
