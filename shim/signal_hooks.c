/* sigaction/signal interposition for the round signal only; every other signal, and everything
 * when no round signal is set, goes straight to libc. */
#include "shim/signal_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "runtime/boundary/boundary.h"
#include "runtime/core/export.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/boundary/signal_rounds.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"
#include "runtime/core/real_dlsym.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

/* libc's functions, looked up once (from the constructor, or at the first call when another
 * library's constructor comes first): signal() and sigaction() are async-signal-safe, dlsym is
 * not, so they must never look anything up later. */
static struct {
    sigaction_fn sigaction;
    signal_fn signal, bsd_signal, sysv_signal;
} real;

static int round_sig; /* 0 until installed */

/* The application's view of the round signal: what it installed, or what was there before us.
 * Two slots, switched by one atomic store, so the handler never reads a half-written action;
 * writers take action_lock with every signal blocked, so a handler never waits on its own
 * thread. */
static struct sigaction app_action[2];
static int app_slot;
static int action_lock;

void roundtrim_signal_hooks_resolve(void)
{
    if (__atomic_load_n(&real.sigaction, __ATOMIC_ACQUIRE))
        return;
    real.signal = (signal_fn)roundtrim_next_symbol("signal");
    real.bsd_signal = (signal_fn)roundtrim_next_symbol("bsd_signal");
    real.sysv_signal = (signal_fn)roundtrim_next_symbol("sysv_signal");
    __atomic_store_n(&real.sigaction, (sigaction_fn)roundtrim_next_symbol("sigaction"),
                     __ATOMIC_RELEASE);
}

static void lock_actions(sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, saved);
    while (__atomic_exchange_n(&action_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void unlock_actions(const sigset_t *saved)
{
    __atomic_store_n(&action_lock, 0, __ATOMIC_RELEASE);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static const struct sigaction *current_app_action(void)
{
    return &app_action[__atomic_load_n(&app_slot, __ATOMIC_ACQUIRE)];
}

static void set_app_action(const struct sigaction *act)
{
    int next = !__atomic_load_n(&app_slot, __ATOMIC_ACQUIRE);
    app_action[next] = *act;
    __atomic_store_n(&app_slot, next, __ATOMIC_RELEASE);
}

/* SA_RESETHAND: the application's handler runs once, then its view is the default again. */
static void reset_app_action(void)
{
    sigset_t saved;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    lock_actions(&saved);
    set_app_action(&dfl);
    unlock_actions(&saved);
}

/* Whether the signal's default action ends the process (those that are ignored or stop it by
 * default are left to mark rounds). */
static bool default_ends_process(int sig)
{
    switch (sig) {
    case SIGCHLD:
    case SIGURG:
    case SIGWINCH:
    case SIGCONT:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
        return false;
    default:
        return true;
    }
}

/* The program sent its round signal to itself (raise, kill(getpid()), sigqueue) with no handler
 * of its own: it asked for the default action, which ends it, as it would without roundtrim
 * (CPython's test_posix spawns such a child). A launcher, `roundtrim round` and every other
 * process mark rounds. */
static bool self_sent_for_default(int sig, const siginfo_t *info)
{
    return info && info->si_code <= 0 && info->si_pid == getpid() && default_ends_process(sig);
}

/* The kernel gets the default action back and the signal again, pending until this handler
 * returns (it is blocked here): the thread then takes it as it would have without us. */
static void take_default_action(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real.sigaction(sig, &dfl, NULL);
    roundtrim_tgkill(getpid(), roundtrim_gettid(), sig);
}

/* Async-signal-safe: the boundary's snapshot into the queue (plain loads, atomics), the
 * application's handler, then the worker's wake (a sem_post). In a child that shares our memory
 * (a vfork child before its exec) the boundary is not ours to mark. */
static void round_signal_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    struct sigaction app = *current_app_action();
    if (app.sa_handler == SIG_DFL && self_sent_for_default(sig, info)) {
        take_default_action(sig);
        errno = saved_errno;
        return;
    }
    bool marked = !roundtrim_in_vm_child();
    if (marked)
        roundtrim_boundary_from_signal();
    if (app.sa_flags & SA_RESETHAND)
        reset_app_action();
    /* SIG_DFL here is the action the program found and never changed: marking rounds is the
     * signal's job now (a program that sets SIG_DFL itself gets the signal back). */
    if (app.sa_handler != SIG_DFL && app.sa_handler != SIG_IGN) {
        if (app.sa_flags & SA_SIGINFO)
            app.sa_sigaction(sig, info, uctx);
        else
            app.sa_handler(sig);
    }
    /* The counts were cut at the signal; the round's work (gc among it) starts once the
     * program's handler is done, so that the handler never sees roundtrim's threads at work in
     * the middle of it (faulthandler's dump of every thread). A handler that does not return
     * (siglongjmp) leaves the round to the worker's next wake. */
    if (marked)
        roundtrim_boundary_signal_wake();
    errno = saved_errno;
}

/* The kernel reads SIG_DFL and SIG_IGN from the handler field whatever SA_SIGINFO says (it is one
 * field in a union). */
static bool is_default(const struct sigaction *act)
{
    return act->sa_handler == SIG_DFL;
}

static bool is_ignore(const struct sigaction *act)
{
    return act->sa_handler == SIG_IGN;
}

/* Our handler runs with the application's mask and restart behaviour, so that a program that
 * relies on EINTR from this signal still gets it. */
static int install_ours(const struct sigaction *app)
{
    /* An ignored signal stays ignored, in the kernel too: that is what a program exec'd from
     * here inherits, and a program that ignores the round signal does not want it acted on. */
    if (is_ignore(app))
        return real.sigaction(round_sig, app, NULL);
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = round_signal_handler;
    ours.sa_mask = app->sa_mask;
    bool app_has_handler = !is_default(app);
    int keep =
        app_has_handler ? (app->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER)) : SA_RESTART;
    ours.sa_flags = SA_SIGINFO | keep;
    return real.sigaction(round_sig, &ours, NULL);
}

void roundtrim_signal_source_install(int sig)
{
    roundtrim_signal_hooks_resolve();
    struct sigaction before;
    if (!real.sigaction || real.sigaction(sig, NULL, &before) != 0)
        return;
    sigset_t saved;
    lock_actions(&saved);
    set_app_action(&before);
    round_sig = sig;
    if (install_ours(&before) != 0)
        round_sig = 0;
    unlock_actions(&saved);
}

/* Whether the program's SIG_DFL / SIG_IGN was noted for the log (said once, unless a handler of
 * its own came back before anything was said). Written with the actions locked. */
static bool default_said, ignore_said;

/* The program asked for the default action itself: the kernel gets it, so the signal marks no
 * round until the program installs a handler of its own again (many programs reset a signal to
 * SIG_DFL before installing their handler: a shell's trap does). Rounds by call, hook, timer and
 * pressure go on. Called with the actions locked. */
static int give_signal_back(const struct sigaction *act)
{
    int rc = real.sigaction(round_sig, act, NULL);
    if (rc == 0) {
        set_app_action(act);
        if (!default_said) {
            default_said = true;
            roundtrim_signal_rounds_off_note("program_set_default");
        }
    }
    return rc;
}

/* Whether the round signal is ours in this call: set, this signal, and not a child that shares
 * our memory (its dispositions are its own in the kernel; what it sets must not become the
 * parent's view). */
static bool round_signal_call(int sig)
{
    int ours = __atomic_load_n(&round_sig, __ATOMIC_ACQUIRE);
    return ours != 0 && sig == ours && !roundtrim_in_vm_child();
}

ROUNDTRIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    roundtrim_signal_hooks_resolve();
    if (!real.sigaction) {
        errno = ENOSYS;
        return -1;
    }
    if (!round_signal_call(sig))
        return real.sigaction(sig, act, old);
    sigset_t saved;
    lock_actions(&saved);
    struct sigaction previous = *current_app_action();
    int rc = 0;
    if (act && is_default(act)) {
        rc = give_signal_back(act);
    } else if (act) {
        if (is_ignore(act) && !ignore_said) {
            ignore_said = true;
            roundtrim_signal_rounds_off_note("program_set_ignore");
        } else if (!is_ignore(act) && roundtrim_signal_rounds_off_take()) {
            /* A handler of its own before anything was said: rounds by signal never stopped
             * for the log's reader, so there is nothing to say. */
            default_said = ignore_said = false;
        }
        set_app_action(act);
        install_ours(act);
    }
    unlock_actions(&saved);
    if (rc == 0 && old)
        *old = previous;
    return rc;
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
static handler_fn forward_simple(signal_fn fn, int sig, handler_fn handler)
{
    if (!fn) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return fn(sig, handler);
}

ROUNDTRIM_EXPORT handler_fn signal(int sig, handler_fn handler)
{
    roundtrim_signal_hooks_resolve();
    if (!round_signal_call(sig))
        return forward_simple(real.signal, sig, handler);
    return install_simple(sig, handler, SA_RESTART);
}

ROUNDTRIM_EXPORT handler_fn bsd_signal(int sig, handler_fn handler)
{
    roundtrim_signal_hooks_resolve();
    if (!round_signal_call(sig))
        return forward_simple(real.bsd_signal, sig, handler);
    return install_simple(sig, handler, SA_RESTART);
}

ROUNDTRIM_EXPORT handler_fn sysv_signal(int sig, handler_fn handler)
{
    roundtrim_signal_hooks_resolve();
    if (!round_signal_call(sig))
        return forward_simple(real.sysv_signal, sig, handler);
    return install_simple(sig, handler, SA_RESETHAND | SA_NODEFER);
}
