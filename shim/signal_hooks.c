/* sigaction/signal interposition for the round signal only; every other signal, and everything
 * when no round signal is set, goes straight to libc. */
#include "shim/signal_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "runtime/boundary.h"
#include "runtime/export.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);

static sigaction_fn real_sigaction_fn;
static int round_sig; /* 0 until installed */

/* The application's view of the round signal: what it installed, or what was there before us.
 * Two slots, switched by one atomic store, so the handler never reads a half-written action. */
static struct sigaction app_action[2];
static int app_slot;

static sigaction_fn real_sigaction(void)
{
    if (!real_sigaction_fn)
        real_sigaction_fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction_fn;
}

static void set_app_action(const struct sigaction *act)
{
    int next = !__atomic_load_n(&app_slot, __ATOMIC_ACQUIRE);
    app_action[next] = *act;
    __atomic_store_n(&app_slot, next, __ATOMIC_RELEASE);
}

/* Async-signal-safe: an atomic add and a sem_post, then the application's handler. */
static void round_signal_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    roundtrim_boundary_from_signal();
    const struct sigaction *app = &app_action[__atomic_load_n(&app_slot, __ATOMIC_ACQUIRE)];
    int flags = app->sa_flags;
    if (flags & SA_SIGINFO) {
        void (*fn)(int, siginfo_t *, void *) = app->sa_sigaction;
        if (flags & SA_RESETHAND) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            set_app_action(&dfl);
        }
        if (fn)
            fn(sig, info, uctx);
    } else {
        handler_fn fn = app->sa_handler;
        if (flags & SA_RESETHAND) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            set_app_action(&dfl);
        }
        /* SIG_DFL for a round signal would end the process: marking rounds is its job now. */
        if (fn != SIG_DFL && fn != SIG_IGN)
            fn(sig);
    }
    errno = saved_errno;
}

/* Our handler runs with the application's mask and restart behaviour, so that a program that
 * relies on EINTR from this signal still gets it. */
static int install_ours(const struct sigaction *app)
{
    /* An ignored signal stays ignored, in the kernel too: that is what a program exec'd from
     * here inherits, and a program that ignores the round signal does not want it acted on. */
    if (!(app->sa_flags & SA_SIGINFO) && app->sa_handler == SIG_IGN)
        return real_sigaction()(round_sig, app, NULL);
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = round_signal_handler;
    ours.sa_mask = app->sa_mask;
    bool app_has_handler =
        (app->sa_flags & SA_SIGINFO) || (app->sa_handler != SIG_DFL && app->sa_handler != SIG_IGN);
    int keep =
        app_has_handler ? (app->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER)) : SA_RESTART;
    ours.sa_flags = SA_SIGINFO | keep;
    return real_sigaction()(round_sig, &ours, NULL);
}

void roundtrim_signal_source_install(int sig)
{
    sigaction_fn real = real_sigaction();
    struct sigaction before;
    if (!real || real(sig, NULL, &before) != 0)
        return;
    set_app_action(&before);
    round_sig = sig;
    if (install_ours(&before) != 0)
        round_sig = 0;
}

ROUNDTRIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (sig != round_sig || round_sig == 0)
        return real(sig, act, old);
    struct sigaction previous = app_action[__atomic_load_n(&app_slot, __ATOMIC_ACQUIRE)];
    if (act) {
        set_app_action(act);
        install_ours(act);
    }
    if (old)
        *old = previous;
    return 0;
}

/* signal() with glibc's BSD semantics: restart, and the signal blocked in its own handler. */
static handler_fn install_simple(int sig, handler_fn handler, int flags)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&act.sa_mask, sig);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return (old.sa_flags & SA_SIGINFO) ? (handler_fn)(void *)old.sa_sigaction : old.sa_handler;
}

/* Signals other than ours go to libc's own function, which knows about siginterrupt(). */
static handler_fn forward_simple(const char *name, int sig, handler_fn handler)
{
    handler_fn (*real)(int, handler_fn) = (handler_fn(*)(int, handler_fn))dlsym(RTLD_NEXT, name);
    if (!real) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return real(sig, handler);
}

ROUNDTRIM_EXPORT handler_fn signal(int sig, handler_fn handler)
{
    if (sig != round_sig || round_sig == 0)
        return forward_simple("signal", sig, handler);
    return install_simple(sig, handler, SA_RESTART);
}

ROUNDTRIM_EXPORT handler_fn bsd_signal(int sig, handler_fn handler)
{
    if (sig != round_sig || round_sig == 0)
        return forward_simple("bsd_signal", sig, handler);
    return install_simple(sig, handler, SA_RESTART);
}

ROUNDTRIM_EXPORT handler_fn sysv_signal(int sig, handler_fn handler)
{
    if (sig != round_sig || round_sig == 0)
        return forward_simple("sysv_signal", sig, handler);
    return install_simple(sig, handler, SA_RESETHAND | SA_NODEFER);
}
