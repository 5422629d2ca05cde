/* _exit and _Exit: a process that ends through them (os._exit, a forked worker that never
 * returns from its loop) still records its pending rounds and its exit record, within the exit
 * budget, like one that calls exit(). A process with nothing of its own to record, a vfork child
 * above all, goes straight to libc. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/export.h"
#include "runtime/round.h"
#include "runtime/state.h"

typedef void (*exit_fn)(int);

static exit_fn real_exit, real_Exit;
static pid_t owner_pid; /* this process's pid, as of the constructor or the last fork */

static void note_fork_child(void)
{
    owner_pid = getpid();
}

/* dlsym is not async-signal-safe and _exit is: look both up before anyone can call them. */
__attribute__((constructor)) static void exit_hooks_resolve(void)
{
    real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
    owner_pid = getpid();
    pthread_atfork(NULL, NULL, note_fork_child);
}

/* A vfork (or CLONE_VM) child runs in its parent's memory until it execs or exits: no atfork
 * handler ran there, so its pid is not the one noted, and it must touch nothing of ours. */
static bool in_vfork_child(void)
{
    return owner_pid != 0 && (pid_t)syscall(SYS_getpid) != owner_pid;
}

static void record_exit(void)
{
    if (!roundtrim_active() || in_vfork_child() || !roundtrim_round_exit_wanted())
        return;
    int saved_errno = errno;
    roundtrim_round_at_exit();
    errno = saved_errno;
}

__attribute__((noreturn)) static void forward(exit_fn fn, int status)
{
    if (fn)
        fn(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

ROUNDTRIM_EXPORT void _exit(int status)
{
    record_exit();
    forward(real_exit, status);
}

ROUNDTRIM_EXPORT void _Exit(int status)
{
    record_exit();
    forward(real_Exit, status);
}
