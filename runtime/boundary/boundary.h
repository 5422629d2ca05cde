/* Round boundaries: where they come from, what is read at their instant, and how they reach the
 * worker thread. */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_BOUNDARY_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_BOUNDARY_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/round_record.h"
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

/* What a boundary reads at its own instant: cumulative counters, so that a round's figures are
 * the difference of two snapshots however late the worker gets to them. */
struct roundtrim_boundary_snap {
    enum roundtrim_source src;
    double wall_s;           /* seconds since the epoch */
    uint64_t dropped_before; /* boundaries that found the queue full, up to this one */
    const char *label;       /* what marked it, when the source names it (a hook); static */
    struct roundtrim_traffic traffic;
    struct roundtrim_cuda_counts cuda;
};

/* A boundary seen in normal (non-signal) context, on any thread: snapshot on the calling thread,
 * then the worker is started if needed and woken. */
void roundtrim_boundary(enum roundtrim_source src);

/* The same, with a label the record can name (a hooked function): a string that lives as long
 * as the process, carried with the snapshot so that a late record still names its own. */
void roundtrim_boundary_labelled(enum roundtrim_source src, const char *label);

/* A boundary seen in a signal handler: the same snapshot, async-signal-safe (no lock, no
 * allocation). roundtrim_boundary_signal_wake then wakes the worker (or, when it does not run
 * yet, has it started at the next malloc or free); the handler calls it last. */
void roundtrim_boundary_from_signal(void);
void roundtrim_boundary_signal_wake(void);

/* Boundaries seen so far in this process (every one, recorded or not). */
uint64_t roundtrim_boundaries_seen(void);

/* The oldest boundary not yet taken by the worker; false when there is none. `merged` says how
 * many earlier boundaries found the queue full: their traffic is in this snapshot's difference,
 * and they are recorded as part of it. Consumer side: one thread at a time. */
bool roundtrim_boundary_take(struct roundtrim_boundary_snap *out, uint64_t *merged);

/* Whether a boundary is waiting for the worker. */
bool roundtrim_boundary_pending(void);

void roundtrim_boundary_fork_child(void);

#endif
