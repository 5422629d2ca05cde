/* glibc functions newer than the baseline (glibc 2.17, docs/compatibility.md) that have no
 * system call of their own: looked up at run time, so that the library loads on an older libc,
 * and used where there; each says what stands in for it where it is missing. */
#ifndef ROUNDTRIM_RUNTIME_CORE_LIBC_LATER_H
#define ROUNDTRIM_RUNTIME_CORE_LIBC_LATER_H

#include <semaphore.h>
#include <time.h>

/* sem_clockwait(sem, CLOCK_MONOTONIC, deadline) (glibc 2.30); before it, sem_timedwait with the
 * deadline moved to CLOCK_REALTIME when the wait starts (a clock step while waiting moves the
 * wake). Not async-signal-safe: the first call looks the function up. */
int roundtrim_sem_wait_monotonic(sem_t *sem, const struct timespec *deadline);

/* sigabbrev_np(sig) (glibc 2.32): "USR1" for SIGUSR1; before it, the same names from a table of
 * the standard signals. NULL for a number without a name. */
const char *roundtrim_signal_abbrev(int sig);

/* __cxa_thread_atexit_impl(fn, obj, dso_symbol) (glibc 2.18): fn(obj) runs when the calling
 * thread exits, before exit's atexit handlers on the main thread. False where libc lacks it. */
_Bool roundtrim_thread_atexit(void (*fn)(void *), void *obj, void *dso_symbol);

#endif
