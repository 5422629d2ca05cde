/* What a boundary reads at its own instant, and where the boundary came from. */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_SNAPSHOT_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_SNAPSHOT_H

#include <stdint.h>

#include "policy/traffic.h"
#include "runtime/cuda/track.h"

enum roundtrim_source {
    ROUNDTRIM_SRC_SIGNAL,
    ROUNDTRIM_SRC_CALL,
    ROUNDTRIM_SRC_PYTHON,
    ROUNDTRIM_SRC_TIMER,
    ROUNDTRIM_SRC_PRESSURE,
    ROUNDTRIM_SRC_COUNT
};

const char *roundtrim_source_name(enum roundtrim_source src);

/* Cumulative counters, so that a round's figures are the difference of two snapshots however
 * late the worker gets to them. */
struct roundtrim_boundary_snap {
    enum roundtrim_source src;
    double wall_s;           /* seconds since the epoch */
    uint64_t mono_us;        /* CLOCK_MONOTONIC: round lengths that no clock step can bend */
    uint64_t dropped_before; /* boundaries that found the queue full, up to this one */
    const char *label;       /* what marked it, when the source names it (a hook); static */
    struct roundtrim_traffic traffic;
    struct roundtrim_cuda_counts cuda;
};

#endif
