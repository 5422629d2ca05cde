/* What a round record says of the round before any cleanup: its allocation traffic cut at the
 * boundary itself, RSS, the memory limit, the CUDA traffic and the memory's parts. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_ROUND_MEASURE_H
#define ROUNDTRIM_RUNTIME_ROUNDS_ROUND_MEASURE_H

#include "runtime/boundary/boundary.h"

struct roundtrim_round_record;

/* Counters come from the boundary's own snapshot (the part above the previous boundary's);
 * the rest is read now, and left out with "exiting" once the process is ending. */
void roundtrim_round_measure(struct roundtrim_round_record *r,
                             const struct roundtrim_boundary_snap *s);

void roundtrim_round_measure_fork_child(void);

#endif
