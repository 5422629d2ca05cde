#include "runtime/python/gil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "runtime/core/clock.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/python/api.h"
#include "runtime/threads/thread_spawn.h"

/* One request at a time. States move: IDLE -> QUEUED (caller) -> HAS_GIL (helper) -> DONE
 * (helper) -> IDLE (caller). A caller that gives up while QUEUED marks it ABANDONED; the helper
 * then releases the GIL at once without running the job. A caller that gives up on HAS_GIL
 * marks it RUNNING_ORPHAN and leaves the job running; the helper sets IDLE when it ends, and
 * the job's results are dropped. Nothing is queued until the state is IDLE again, so at most one
 * job ever runs and only the helper writes `result` while one does. */
enum req_state { IDLE, QUEUED, HAS_GIL, DONE, ABANDONED, RUNNING_ORPHAN };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t to_helper;
static pthread_cond_t to_caller;
static bool conds_ready;
static bool helper_started;
static enum req_state state = IDLE;
static roundtrim_py_job cur_job;
static struct roundtrim_py_result result; /* the running job's; read by the caller on DONE */
static enum roundtrim_skip cur_why;
static bool exiting; /* the process is ending: no job starts any more */
/* The interpreter is about to finalize (its threading shutdown, or an embedder's Py_FinalizeEx):
 * no job starts until it is gone. Cleared once it is: an embedder may start another one. */
static bool interp_ending;
/* Bumped each time an interpreter is known to be gone: what was learnt of the old one (its gc
 * statistics, its threading module) is not the next one's. */
static unsigned generation;
/* An exec is replacing the process: a job still waiting for the GIL gives up (the thread calling
 * exec may hold it); cleared again when the exec fails. */
static bool exec_begun;
/* The exit barrier: on_interpreter_shutdown registered with the interpreter's own shutdown, so
 * that it cannot finalize while the helper is inside PyGILState_Ensure (which then takes runtime
 * locks already freed, and the process dies). Registered under the GIL, in the main interpreter:
 * as the program starts, by the audit hook (runtime/python/round_hook_audit.c); by every job; and
 * before an interpreter's first job that finds none, by a pending call the main thread runs
 * (wait_for_barrier). ADDING while one thread registers it (the call may let the GIL go). */
enum barrier_state { BARRIER_NONE, BARRIER_ADDING, BARRIER_SET };
static enum barrier_state barrier;
static bool barrier_in_atexit;   /* in atexit's callbacks, not threading's */
static bool barrier_asked;       /* a pending call that adds it is queued, not yet run */
static unsigned cur_gil_wait_ms; /* the queued job's caller's wait for the GIL */
static bool helper_stop;         /* asked to end while idle (roundtrim_py_helper_stop) */
static pid_t helper_tid;
static uint64_t jobs_cpu_us; /* CPU time the helper spent in jobs, since start */

static void init_conds(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&to_helper, &a);
    pthread_cond_init(&to_caller, &a);
    pthread_condattr_destroy(&a);
    conds_ready = true;
}

/* Waits, the GIL released when the caller holds it, until no job is queued, waiting for the GIL,
 * running or abandoned by its caller while the helper may still be inside PyGILState_Ensure: the
 * helper takes the GIL, sees interp_ending and gives it back. 10 s at most. */
static void wait_jobs_out(void)
{
    pthread_mutex_lock(&lock);
    bool busy = state != IDLE && state != DONE;
    pthread_mutex_unlock(&lock);
    if (!busy || !conds_ready)
        return;
    void *tstate = roundtrim_py_caller_holds_gil() ? roundtrim_py.Eval_SaveThread() : NULL;
    struct timespec dl = roundtrim_deadline_ms(10000);
    pthread_mutex_lock(&lock);
    while (state != IDLE && state != DONE && helper_started &&
           pthread_cond_timedwait(&to_caller, &lock, &dl) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&lock);
    if (tstate)
        roundtrim_py.Eval_RestoreThread(tstate);
}

void roundtrim_py_gil_interpreter_ending(void)
{
    pthread_mutex_lock(&lock);
    interp_ending = true;
    if (conds_ready) {
        pthread_cond_broadcast(&to_caller); /* a caller waiting for the GIL gives up */
        pthread_cond_broadcast(&to_helper); /* and a helper waiting for the barrier */
    }
    pthread_mutex_unlock(&lock);
    wait_jobs_out();
}

/* The interpreter is gone (the caller saw it so, with no job in the helper): jobs may start again
 * in the next one, which registers the shutdown hook anew. Called with the lock held. */
static void interpreter_gone(void)
{
    interp_ending = false;
    barrier = BARRIER_NONE;
    barrier_asked = false;
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

void roundtrim_py_gil_interpreter_ended(void)
{
    pthread_mutex_lock(&lock);
    if (state == IDLE || state == DONE)
        interpreter_gone();
    pthread_mutex_unlock(&lock);
}

unsigned roundtrim_py_gil_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

/* The exit barrier: called by threading._shutdown() or by atexit, on the main thread holding the
 * GIL, before the interpreter starts finalizing. A job running then could lose the GIL inside an
 * extension's deallocator (PyTorch releases it there) and find the interpreter finalizing when it
 * takes it back: CPython then ends the helper thread with pthread_exit, whose unwinding through the
 * extension's C++ frames aborts the process. A job still waiting in PyGILState_Ensure would
 * wait through the finalization: CPython ends it too, or, when the embedder starts another
 * interpreter, it wakes in that one holding a thread state of the old one, and CPython aborts
 * the process when it gives it back. So from here on no job starts in this interpreter, and a
 * job queued or running is waited for, the GIL released meanwhile so that it can finish. */
static py_object *on_interpreter_shutdown(py_object *self, py_object *unused)
{
    (void)self;
    (void)unused;
    /* atexit's callbacks run from C as the interpreter ends, with no Python frame under them;
     * one running under a frame is a program's own atexit._run_exitfuncs(), after which it goes
     * on: its jobs are waited for as at the end, and then run again (the call emptied atexit's
     * list: the next job registers the barrier anew). */
    pthread_mutex_lock(&lock);
    bool by_program =
        barrier_in_atexit && roundtrim_py.Eval_GetFrame && roundtrim_py.Eval_GetFrame() != NULL;
    pthread_mutex_unlock(&lock);
    roundtrim_py_gil_interpreter_ending();
    if (by_program) {
        pthread_mutex_lock(&lock);
        interp_ending = false;
        if (barrier == BARRIER_SET)
            barrier = BARRIER_NONE;
        pthread_mutex_unlock(&lock);
    }
    roundtrim_py.IncRef(roundtrim_py.None);
    return roundtrim_py.None;
}

static struct py_method_def shutdown_def = {"_roundtrim_shutdown", (void *)on_interpreter_shutdown,
                                            PY_METH_NOARGS, NULL};

/* module.<register>(on_interpreter_shutdown); false on any error (cleared). GIL held. */
static bool register_barrier_with(py_object *module, const char *register_name)
{
    py_object *reg = module ? roundtrim_py.Object_GetAttrString(module, register_name) : NULL;
    py_object *fn = reg ? roundtrim_py.CFunction_NewEx(&shutdown_def, NULL, NULL) : NULL;
    py_object *r = fn ? roundtrim_py.Object_CallFunctionObjArgs(reg, fn, NULL) : NULL;
    if (r)
        roundtrim_py.DecRef(r);
    if (fn)
        roundtrim_py.DecRef(fn);
    if (reg)
        roundtrim_py.DecRef(reg);
    if (!r)
        roundtrim_py.Err_Clear();
    return r != NULL;
}

/* atexit.register(on_interpreter_shutdown). A program that has not imported atexit does not find
 * it in sys.modules afterwards either, from 3.10 on: its callbacks live in the interpreter, not in
 * the module, and an import of its own makes the module anew. Before, they live in the module's
 * state, which must stay where the interpreter finds it. GIL held. */
static bool register_with_atexit(void)
{
    py_object *atexit = roundtrim_py_sys_module("atexit");
    bool imported = false;
    if (atexit) {
        roundtrim_py.IncRef(atexit);
    } else {
        atexit = roundtrim_py.Import_ImportModule("atexit");
        imported = atexit != NULL;
    }
    bool ok = atexit && register_barrier_with(atexit, "register");
    if (imported && roundtrim_py.minor >= 10) {
        py_object *modules = roundtrim_py.Sys_GetObject("modules");
        if (modules && roundtrim_py.Dict_DelItemString(modules, "atexit") != 0)
            roundtrim_py.Err_Clear();
    }
    if (atexit)
        roundtrim_py.DecRef(atexit);
    else
        roundtrim_py.Err_Clear();
    return ok;
}

/* atexit's callbacks run once the program's threads are joined, just before the interpreter
 * finalizes: jobs go on while a program waits for its threads (training in them, maybe for
 * hours). threading's shutdown callbacks, which come before that join, take the barrier where
 * atexit cannot be had. A sub-interpreter's are not the process's: nothing there. */
void roundtrim_py_exit_barrier_add(void)
{
    if (!roundtrim_py.CFunction_NewEx || !roundtrim_py.None ||
        (roundtrim_py.hooks && !roundtrim_py_in_main_interpreter()))
        return;
    pthread_mutex_lock(&lock);
    bool mine = barrier == BARRIER_NONE;
    if (mine)
        barrier = BARRIER_ADDING;
    pthread_mutex_unlock(&lock);
    if (!mine)
        return;
    bool in_atexit = roundtrim_py.Import_ImportModule && roundtrim_py.Dict_DelItemString &&
                     register_with_atexit();
    bool ok = in_atexit ||
              register_barrier_with(roundtrim_py_sys_module("threading"), "_register_atexit");
    pthread_mutex_lock(&lock);
    barrier = ok ? BARRIER_SET : BARRIER_NONE;
    barrier_in_atexit = in_atexit;
    if (conds_ready)
        pthread_cond_broadcast(&to_helper);
    pthread_mutex_unlock(&lock);
}

/* The pending call that sets the barrier: run by the main thread between two bytecodes, or as
 * the interpreter's finalization begins, with the GIL; the program's pending exception, if any,
 * is left as it was. */
static int barrier_call(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    barrier_asked = false;
    pthread_mutex_unlock(&lock);
    struct roundtrim_py_err saved;
    roundtrim_py_err_save(&saved);
    roundtrim_py_exit_barrier_add();
    roundtrim_py_err_restore(&saved);
    pthread_mutex_lock(&lock);
    if (conds_ready)
        pthread_cond_broadcast(&to_helper);
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Called with the lock held, which it may release while it waits: before a job asks for the GIL
 * in an interpreter without the barrier, the main thread is asked to set it (one pending call at
 * a time), and waited for, half the caller's wait for the GIL at most. Without it, as where the
 * main thread sits in C code meanwhile or the registration failed, the job goes on and sets the
 * barrier itself. Not before 3.9, whose Py_AddPendingCall, during the first steps of a
 * finalization, raises an error from a thread without the GIL. */
static void wait_for_barrier(void)
{
    if (barrier == BARRIER_SET || !roundtrim_py.hooks || roundtrim_py.minor < 9)
        return;
    if (barrier == BARRIER_NONE && !barrier_asked) {
        barrier_asked = true;
        pthread_mutex_unlock(&lock);
        bool asked = roundtrim_py_running() && roundtrim_py.AddPendingCall(barrier_call, NULL) == 0;
        pthread_mutex_lock(&lock);
        if (!asked)
            barrier_asked = false;
    }
    struct timespec dl = roundtrim_deadline_ms(cur_gil_wait_ms / 2);
    while (barrier != BARRIER_SET && (barrier_asked || barrier == BARRIER_ADDING) &&
           state == QUEUED && !interp_ending && !exiting && !exec_begun &&
           pthread_cond_timedwait(&to_helper, &lock, &dl) != ETIMEDOUT)
        ;
}

/* CPython ended the helper inside PyGILState_Ensure (pthread_exit: it asked for the GIL while the
 * interpreter finalized): the request ends as "finalizing", and the next job starts a new
 * helper. */
static void helper_ended_in_ensure(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    helper_started = false;
    cur_why = RT_SKIP_finalizing;
    state = state == ABANDONED ? IDLE : DONE;
    pthread_cond_broadcast(&to_caller);
    pthread_mutex_unlock(&lock);
}

/* PyGILState_Ensure, with helper_ended_in_ensure run should CPython end the thread in it. */
static int ensure_or_end(void)
{
    volatile int gs = 0; /* volatile: the cleanup's setjmp must not clobber it */
    pthread_cleanup_push(helper_ended_in_ensure, NULL);
    gs = roundtrim_py.GILState_Ensure();
    pthread_cleanup_pop(0);
    return gs;
}

/* Takes the GIL for the queued job, with the lock released: taking it may block for a long
 * time, or end this thread when the interpreter finalizes. Never while the interpreter is about to
 * finalize: a thread still waiting for the GIL when finalization begins may wake in the next
 * interpreter an embedder starts, holding a thread state of the old one. */
static bool take_gil(int *gs)
{
    bool can = state == QUEUED && !interp_ending && !exiting && !exec_begun;
    if (can) {
        wait_for_barrier();
        can = state == QUEUED && !interp_ending && !exiting && !exec_begun;
    }
    pthread_mutex_unlock(&lock);
    can = can && roundtrim_py_running();
    if (can)
        *gs = ensure_or_end();
    pthread_mutex_lock(&lock);
    return can;
}

/* Runs the queued job under the GIL (called and returning with the lock held). */
static void serve_one(void)
{
    int gs = 0;
    if (!take_gil(&gs)) {
        cur_why = exiting ? RT_SKIP_exiting : RT_SKIP_finalizing;
        state = state == ABANDONED ? IDLE : DONE;
        pthread_cond_broadcast(&to_caller);
        return;
    }
    if (state == ABANDONED) {
        pthread_mutex_unlock(&lock);
        roundtrim_py.GILState_Release(gs);
        pthread_mutex_lock(&lock);
        state = IDLE;
        pthread_cond_broadcast(&to_caller);
        return;
    }
    state = HAS_GIL;
    result = (struct roundtrim_py_result){0, 0, 0};
    /* Read under the lock, after the GIL was taken: one who set them and waits for the job to
     * be out holds the GIL no more. */
    enum roundtrim_skip why = exiting         ? RT_SKIP_exiting
                              : interp_ending ? RT_SKIP_finalizing
                                              : RT_SKIP_NONE;
    pthread_cond_broadcast(&to_caller);
    pthread_mutex_unlock(&lock);
    /* Checked again under the GIL: finalization may have begun while we waited. */
    if (!why && !roundtrim_py_running())
        why = RT_SKIP_finalizing;
    if (!why) {
        roundtrim_py_exit_barrier_add();
        uint64_t cpu0 = roundtrim_thread_cpu_us();
        why = cur_job(&result);
        __atomic_add_fetch(&jobs_cpu_us, roundtrim_thread_cpu_us() - cpu0, __ATOMIC_RELAXED);
    }
    roundtrim_py.GILState_Release(gs);
    pthread_mutex_lock(&lock);
    cur_why = why;
    state = state == RUNNING_ORPHAN ? IDLE : DONE;
    pthread_cond_broadcast(&to_caller);
}

static void *helper_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    helper_tid = roundtrim_gettid();
    for (;;) {
        while (state != QUEUED && state != ABANDONED && !helper_stop)
            pthread_cond_wait(&to_helper, &lock);
        if (helper_stop && state == IDLE) {
            helper_started = false; /* the next job starts a new helper */
            pthread_cond_broadcast(&to_caller);
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        if (state == ABANDONED) {
            state = IDLE;
            pthread_cond_broadcast(&to_caller);
            continue;
        }
        serve_one();
    }
    return NULL;
}

static bool start_helper(void)
{
    if (helper_started)
        return true;
    if (!conds_ready)
        init_conds();
    helper_stop = false;
    if (roundtrim_spawn_thread(helper_main, NULL, "roundtrim-py", 0) != 0)
        return false;
    helper_started = true;
    return true;
}

/* Waits until the state leaves `from` or the deadline passes (or, with until_exit, the process
 * starts to exit); false when it did not leave. */
static bool wait_leave(enum req_state from, unsigned ms, bool until_exit)
{
    struct timespec dl = roundtrim_deadline_ms(ms);
    while (state == from && !(until_exit && (exiting || interp_ending || exec_begun))) {
        if (pthread_cond_timedwait(&to_caller, &lock, &dl) == ETIMEDOUT)
            break;
    }
    return state != from;
}

/* Waits until the helper has ended (helper_started false) or the deadline passes. */
static bool wait_leave_started(unsigned ms)
{
    struct timespec dl = roundtrim_deadline_ms(ms);
    while (helper_started) {
        if (pthread_cond_timedwait(&to_caller, &lock, &dl) == ETIMEDOUT)
            return !helper_started;
    }
    return true;
}

enum roundtrim_skip roundtrim_py_with_gil(roundtrim_py_job job, struct roundtrim_py_result *out,
                                          unsigned gil_wait_ms, unsigned run_wait_ms)
{
    if (!roundtrim_py.found)
        return RT_SKIP_no_python;
    if (!roundtrim_py.IsInitialized()) {
        roundtrim_py_gil_interpreter_ended(); /* the next interpreter gets jobs again */
        return RT_SKIP_no_interpreter;
    }
    if (!roundtrim_py_running()) {
        return RT_SKIP_finalizing;
    }
    /* A caller holding the GIL (a destructor run from Python's own thread) would wait for
     * itself. */
    if (roundtrim_py_caller_holds_gil()) {
        return RT_SKIP_caller_holds_gil;
    }
    pthread_mutex_lock(&lock);
    if (exiting || interp_ending || exec_begun) {
        pthread_mutex_unlock(&lock);
        return exiting ? RT_SKIP_exiting : interp_ending ? RT_SKIP_finalizing : RT_SKIP_exec;
    }
    if (state != IDLE) {
        pthread_mutex_unlock(&lock);
        return RT_SKIP_busy;
    }
    if (!start_helper()) {
        pthread_mutex_unlock(&lock);
        return RT_SKIP_thread_failed;
    }
    cur_job = job;
    cur_gil_wait_ms = gil_wait_ms;
    cur_why = RT_SKIP_NONE;
    state = QUEUED;
    pthread_cond_signal(&to_helper);
    enum roundtrim_skip why = RT_SKIP_NONE;
    /* A job not yet started is given up when the process exits: the exiting thread may hold
     * the GIL for good (os._exit). One that runs is waited for as usual. */
    if (!wait_leave(QUEUED, gil_wait_ms, true)) {
        state = ABANDONED;
        why = exiting         ? RT_SKIP_exiting
              : interp_ending ? RT_SKIP_finalizing
              : exec_begun    ? RT_SKIP_exec
                              : RT_SKIP_gil_timeout;
    } else if (!wait_leave(HAS_GIL, run_wait_ms, false)) {
        state = RUNNING_ORPHAN;
        why = RT_SKIP_job_timeout;
    } else {
        /* DONE: the helper has finished writing `result` (it set DONE under this lock). */
        why = cur_why;
        if (!why)
            *out = result;
        state = IDLE;
    }
    pthread_mutex_unlock(&lock);
    return why;
}

void roundtrim_py_gil_exiting(void)
{
    pthread_mutex_lock(&lock);
    exiting = true;
    if (conds_ready) {
        pthread_cond_broadcast(&to_caller);
        pthread_cond_broadcast(&to_helper); /* a helper waiting for the barrier gives up */
    }
    pthread_mutex_unlock(&lock);
}

void roundtrim_py_gil_exec(bool begun)
{
    /* exec may be called from a signal handler, maybe on a thread inside this lock: never
     * block. The worker holds it only for moments (queuing a job): try for 20 ms at most. */
    int tries = 0;
    while (pthread_mutex_trylock(&lock) != 0) {
        if (++tries == 200)
            return;
        roundtrim_sleep_us(100);
    }
    exec_begun = begun;
    if (begun && conds_ready) {
        pthread_cond_broadcast(&to_caller);
        pthread_cond_broadcast(&to_helper);
    }
    pthread_mutex_unlock(&lock);
}

void roundtrim_py_helper_stop(void)
{
    pthread_mutex_lock(&lock);
    if (!helper_started || state != IDLE) { /* none, or a job still runs: it stays */
        pthread_mutex_unlock(&lock);
        return;
    }
    helper_stop = true;
    pthread_cond_signal(&to_helper);
    bool stopped = wait_leave_started(1000);
    pid_t tid = helper_tid;
    pthread_mutex_unlock(&lock);
    if (stopped) /* then until the kernel has removed the thread (1 s at most) */
        roundtrim_thread_wait_gone(tid, 1000);
}

void roundtrim_py_gil_fork_child(void)
{
    /* Only the forking thread exists in the child: the helper, and any request it served, are
     * gone; the lock may have been held at fork time. */
    pthread_mutex_init(&lock, NULL);
    if (conds_ready)
        init_conds();
    helper_started = false;
    state = IDLE;
    exiting = false; /* the child inherits the parent's threading module, our hook included */
    if (barrier != BARRIER_SET) /* the parent's request is not the child's to wait for */
        barrier = BARRIER_NONE;
    barrier_asked = false;
    interp_ending = false;
    exec_begun = false;
}

uint64_t roundtrim_py_jobs_cpu_us(void)
{
    return __atomic_load_n(&jobs_cpu_us, __ATOMIC_RELAXED);
}
