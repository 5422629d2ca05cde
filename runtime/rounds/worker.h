/* What roundtrim's worker thread (runtime/threads/worker_thread.h) does each time it wakes: the
 * rounds whose boundaries are pending, the peak samples between them, and its end with the
 * program's last thread. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_WORKER_H
#define ROUNDTRIM_RUNTIME_ROUNDS_WORKER_H

#include "runtime/threads/worker_thread.h"

/* Gives the worker thread its work; once, at start. */
void roundtrim_worker_init(void);

#endif
