/* _exit and _Exit: a process that ends through them (os._exit, a forked worker that never
 * returns from its loop) still records its pending rounds and its exit record, within the exit
 * budget, like one that calls exit(). A process with nothing of its own to record, a vfork child
 * above all, goes straight to libc. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/core/export.h"
#include "shim/start.h"
#include "runtime/rounds/round.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"
#include "runtime/core/real_dlsym.h"

typedef void (*exit_fn)(int);

static exit_fn real_exit, real_Exit;

/* dlsym is not async-signal-safe and _exit is: look both up before anyone can call them. */
void roundtrim_exit_hooks_resolve(void)
{
    real_exit = (exit_fn)roundtrim_next_symbol("_exit");
    real_Exit = (exit_fn)roundtrim_next_symbol("_Exit");
}

static void record_exit(void)
{
    /* A vfork child (CPython's subprocess after a failed exec) runs in its parent's memory. */
    if (!roundtrim_active() || roundtrim_in_vm_child() || !roundtrim_round_exit_wanted())
        return;
    int saved_errno = errno;
    roundtrim_round_at_fast_exit();
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
