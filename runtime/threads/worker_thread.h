/* The life of roundtrim's one worker thread: started on the first round boundary (or at start),
 * woken by boundaries, paused for calls that need a lone thread, gone in a fork child. What it
 * does when woken is its body's business (runtime/rounds/worker.c): any part of the runtime can
 * wake it or have it started without depending on that. */
#ifndef ROUNDTRIM_RUNTIME_THREADS_WORKER_THREAD_H
#define ROUNDTRIM_RUNTIME_THREADS_WORKER_THREAD_H

#include <stdbool.h>
#include <stdint.h>

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

/* What the thread runs: called each time it is woken, or when period_ms (its return value, 0
 * for none) passed with no wake (timed_out true). Returns false to end the thread. */
typedef bool (*roundtrim_worker_body_fn)(bool timed_out, uint64_t *period_ms);

void roundtrim_worker_thread_init(roundtrim_worker_body_fn body);

/* Starts the worker if it is not running (normal context only). False if it could not start. */
bool roundtrim_worker_ensure(void);

/* Wakes the worker (async-signal-safe); a no-op before it exists. */
void roundtrim_worker_wake(void);

bool roundtrim_worker_running(void);

/* True on the worker thread itself. */
bool roundtrim_worker_is_self(void);

/* For the body, on the worker: the program's threads are all gone, the worker ends with them.
 * True when it does (false while it is being paused: the pause decides). Left stopped, it can
 * be started again should a thread nobody counted still mark a round. */
bool roundtrim_worker_leave(void);

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
