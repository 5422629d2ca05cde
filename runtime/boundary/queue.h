/* The queue of boundary snapshots to the worker thread: many producers (any thread, signal
 * handlers included), one consumer. Nothing in it takes a lock, allocates or waits. */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_QUEUE_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/boundary/snapshot.h"

/* Queues a snapshot taken just now, setting its dropped_before. When the queue is full the
 * boundary is counted as dropped and kept in one more slot, which holds the latest such
 * boundary; async-signal-safe. */
void roundtrim_boundary_queue_put(struct roundtrim_boundary_snap *snap);

/* The oldest boundary not yet taken by the worker; false when there is none. `merged` says how
 * many earlier boundaries found the queue full: their traffic is in this snapshot's difference,
 * and they are recorded as part of it. Consumer side: one thread at a time. */
bool roundtrim_boundary_take(struct roundtrim_boundary_snap *out, uint64_t *merged);

/* Whether a boundary is waiting for the worker. */
bool roundtrim_boundary_pending(void);

/* Empties the queue and forgets what was dropped (fork child: one thread). */
void roundtrim_boundary_queue_fork_child(void);

#endif
