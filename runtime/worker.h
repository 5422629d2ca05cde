/* roundtrim's one worker thread: started on the first round boundary (or at start when periodic
 * sampling was asked for), it does all the work of a boundary off the application's threads. */
#ifndef ROUNDTRIM_RUNTIME_WORKER_H
#define ROUNDTRIM_RUNTIME_WORKER_H

#include <stdbool.h>

/* Set by a signal handler that saw a boundary before the worker existed: a handler cannot start
 * a thread, so the next malloc or free on any thread does. The handler also turns the malloc
 * fast path off (roundtrim_fast_path_suspend), so that call takes the slow path, which polls. */
extern int roundtrim_worker_start_wanted __attribute__((visibility("hidden")));

void roundtrim_worker_start_from_app(void);

/* On the slow paths of malloc and free: one load of a flag that is almost never set. */
static inline void roundtrim_worker_poll(void)
{
    if (__builtin_expect(__atomic_load_n(&roundtrim_worker_start_wanted, __ATOMIC_RELAXED), 0))
        roundtrim_worker_start_from_app();
}

void roundtrim_worker_init(void);

/* Starts the worker if it is not running (normal context only). False if it could not start. */
bool roundtrim_worker_ensure(void);

/* Wakes the worker (async-signal-safe); a no-op before it exists. */
void roundtrim_worker_wake(void);

bool roundtrim_worker_running(void);

/* True on the worker thread itself. */
bool roundtrim_worker_is_self(void);

/* Stops the worker at a safe point (between rounds, holding nothing) so that the process has one
 * thread fewer for a call that needs it (unshare, setns into a user namespace), waiting a bounded
 * time. True when a resume must follow; boundaries seen meanwhile stay pending. */
bool roundtrim_worker_pause(void);

/* Starts the paused worker again. */
void roundtrim_worker_resume(void);

/* Asks for the worker at the next malloc or free on any thread (async-signal-safe). */
void roundtrim_worker_start_soon(void);

void roundtrim_worker_fork_child(void);

/* In a fork child: whether the parent's worker was running at the fork. */
bool roundtrim_worker_parent_had(void);

#endif
