#include "runtime/core/libc_later.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>

#include "runtime/core/real_dlsym.h"

typedef int (*sem_clockwait_fn)(sem_t *, clockid_t, const struct timespec *);
typedef const char *(*sigabbrev_fn)(int);
typedef int (*thread_atexit_fn)(void (*)(void *), void *, void *);

/* A looked-up function, once: (void *)1 stands for "looked up, absent". */
static void *looked_up(void **slot, const char *name)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = roundtrim_default_symbol(name);
        if (!fn)
            fn = (void *)1;
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    }
    return fn == (void *)1 ? NULL : fn;
}

int roundtrim_sem_wait_monotonic(sem_t *sem, const struct timespec *deadline)
{
    static void *slot;
    sem_clockwait_fn clockwait = (sem_clockwait_fn)looked_up(&slot, "sem_clockwait");
    if (clockwait)
        return clockwait(sem, CLOCK_MONOTONIC, deadline);
    struct timespec mono, real;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    long long ns = (long long)(deadline->tv_sec - mono.tv_sec) * 1000000000LL +
                   (deadline->tv_nsec - mono.tv_nsec);
    if (ns < 0)
        ns = 0;
    ns += real.tv_nsec;
    struct timespec at = {real.tv_sec + (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    return sem_timedwait(sem, &at);
}

const char *roundtrim_signal_abbrev(int sig)
{
    static void *slot;
    sigabbrev_fn abbrev = (sigabbrev_fn)looked_up(&slot, "sigabbrev_np");
    if (abbrev)
        return abbrev(sig);
    /* glibc's names: SIGIO is POLL there, its other name. */
    static const char *const names[] = {
        [SIGHUP] = "HUP",   [SIGINT] = "INT",       [SIGQUIT] = "QUIT", [SIGILL] = "ILL",
        [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",     [SIGBUS] = "BUS",   [SIGFPE] = "FPE",
        [SIGKILL] = "KILL", [SIGUSR1] = "USR1",     [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
        [SIGPIPE] = "PIPE", [SIGALRM] = "ALRM",     [SIGTERM] = "TERM", [SIGSTKFLT] = "STKFLT",
        [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",     [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",
        [SIGTTIN] = "TTIN", [SIGTTOU] = "TTOU",     [SIGURG] = "URG",   [SIGXCPU] = "XCPU",
        [SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH",
        [SIGIO] = "POLL",   [SIGPWR] = "PWR",       [SIGSYS] = "SYS",
    };
    return sig > 0 && (size_t)sig < sizeof names / sizeof names[0] ? names[sig] : NULL;
}

_Bool roundtrim_thread_atexit(void (*fn)(void *), void *obj, void *dso_symbol)
{
    static void *slot;
    thread_atexit_fn add = (thread_atexit_fn)looked_up(&slot, "__cxa_thread_atexit_impl");
    return add && add(fn, obj, dso_symbol) == 0;
}
