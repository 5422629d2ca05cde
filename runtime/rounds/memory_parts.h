/* Reads where the process's memory is (the round record's "memory"): the resident set split into
 * parts that add up, and the device memory, each from its cheapest source. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_MEMORY_PARTS_H
#define ROUNDTRIM_RUNTIME_ROUNDS_MEMORY_PARTS_H

#include "policy/cuda_round.h"
#include "policy/mem_parts.h"
#include "policy/traffic.h"

/* total: the process's cumulative malloc counts at the boundary; cuda: the round's device
 * figures (filled before). */
void roundtrim_memory_parts_read(struct roundtrim_memory_parts *m,
                                 const struct roundtrim_traffic *total,
                                 const struct roundtrim_cuda_round *cuda);

/* Bytes held by live malloc blocks and pymalloc arenas now (what a gc can lower). */
uint64_t roundtrim_memory_live_now(void);

/* Device bytes the process holds from the driver now (its blocks and the pools' reserve). */
uint64_t roundtrim_memory_device_now(void);

#endif
