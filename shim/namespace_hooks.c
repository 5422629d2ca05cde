/* unshare and setns: the kernel refuses a new user namespace (and entering one, or a mount
 * namespace) to a process with more than one thread. roundtrim's worker is a thread the program
 * did not ask for: it is stopped around such a call and started again after it. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>

#include "runtime/core/export.h"
#include "shim/start.h"
#include "runtime/python/gil.h"
#include "runtime/threads/worker_thread.h"
#include "runtime/core/vm_child.h"
#include "runtime/core/real_dlsym.h"

typedef int (*unshare_fn)(int);
typedef int (*setns_fn)(int, int);

static unshare_fn real_unshare;
static setns_fn real_setns;

/* Looked up by the constructor: these calls are made in vfork children, where dlsym is unsafe. */
void roundtrim_namespace_hooks_resolve(void)
{
    real_unshare = (unshare_fn)roundtrim_next_symbol("unshare");
    real_setns = (setns_fn)roundtrim_next_symbol("setns");
}

/* What the kernel checks for a lone thread: unshare(CLONE_NEWUSER) implies CLONE_THREAD;
 * CLONE_SIGHAND and CLONE_VM need it too. */
#define UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
/* setns into a user namespace needs one thread; into a mount namespace, a file-system context
 * shared with no other thread. nstype 0 accepts any kind. */
#define SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS)

static int unshare_call(int flags, int unused)
{
    (void)unused;
    return real_unshare(flags);
}

static int setns_call(int fd, int nstype)
{
    return real_setns(fd, nstype);
}

/* Makes the call with the worker paused when the call needs a lone thread. */
static int call_alone(int (*fn)(int, int), bool resolved, bool alone, int a, int b)
{
    if (!resolved) {
        errno = ENOSYS;
        return -1;
    }
    if (!alone || roundtrim_in_vm_child()) /* a vfork child has no worker of its own */
        return fn(a, b);
    bool paused = roundtrim_worker_pause();
    roundtrim_py_helper_stop(); /* only the worker queues its jobs: paused, it queues none */
    int rc = fn(a, b);
    int saved_errno = errno;
    if (paused)
        roundtrim_worker_resume();
    errno = saved_errno;
    return rc;
}

ROUNDTRIM_EXPORT int unshare(int flags)
{
    if (!real_unshare)
        roundtrim_namespace_hooks_resolve();
    return call_alone(unshare_call, real_unshare != NULL, (flags & UNSHARE_ALONE) != 0, flags, 0);
}

ROUNDTRIM_EXPORT int setns(int fd, int nstype)
{
    if (!real_setns)
        roundtrim_namespace_hooks_resolve();
    return call_alone(setns_call, real_setns != NULL, nstype == 0 || (nstype & SETNS_ALONE), fd,
                      nstype);
}
