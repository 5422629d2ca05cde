/* The calling thread's native return addresses, for a sample (ROUNDTRIM_SITES), through
 * libunwind, opened privately.
 *
 * libunwind's fast trace (unw_backtrace) keeps a frame cache of 256 KiB for each thread that
 * uses it, mapped and filled at the thread's first walk and freed only when the thread exits: a
 * process keeping hundreds of threads that each took a sample held that much RSS per thread for
 * roundtrim. Its step loop keeps no cache per thread but costs tens of microseconds a walk. So
 * a thread walks with the step loop until it has taken a few samples, and then with the fast
 * trace if one of a few places is free: the busy, long-lived threads (a main loop, a data
 * loader) get the fast walks, and the caches together stay under
 * ROUNDTRIM_NATIVE_FAST_THREADS * 256 KiB whatever the number of threads. A place is given back
 * when its thread exits. */
#ifndef ROUNDTRIM_RUNTIME_SITES_NATIVE_STACK_H
#define ROUNDTRIM_RUNTIME_SITES_NATIVE_STACK_H

#include <stdbool.h>
#include <stdint.h>

/* Threads that may hold libunwind's fast-trace cache at once. */
#define ROUNDTRIM_NATIVE_FAST_THREADS 8
/* Samples a thread takes with the step loop before it asks for a place. */
#define ROUNDTRIM_NATIVE_SLOW_SAMPLES 8

/* Loads libunwind (constructor or worker, never inside malloc). False when it is missing. */
bool roundtrim_native_stack_init(void);

/* Fills ips with at most max return addresses of the calling thread, innermost first (this
 * function's own frame left out), and returns how many. Runs inside malloc, with roundtrim's
 * own allocations set aside by the caller (libunwind's, pthread_setspecific's). */
int roundtrim_native_stack(void **ips, int max);

/* Threads holding a fast-trace place now (for tests and the sites record). */
unsigned roundtrim_native_fast_threads(void);

/* Fork child: only the forking thread lives on, with its place if it had one. */
void roundtrim_native_stack_fork_child(void);

#endif
