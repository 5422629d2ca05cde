/* Round boundaries: where they come from, what is read at their instant, and how they reach the
 * worker thread. */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_BOUNDARY_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_BOUNDARY_H

#include <stdint.h>

#include "runtime/boundary/queue.h"
#include "runtime/boundary/snapshot.h"

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

void roundtrim_boundary_fork_child(void);

#endif
