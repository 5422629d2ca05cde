/* Running a short piece of C under the GIL for the worker thread, with a bounded wait.
 *
 * The work runs on a helper thread of roundtrim's own, never on the caller: PyGILState_Ensure
 * cannot time out, and a thread that asks for the GIL while the interpreter finalizes is ended
 * by CPython (pthread_exit before 3.14) or blocked for good (3.14). Either fate stays with the
 * helper; the caller only waits, and gives up after the bound (a helper ended so is replaced at
 * the next job). Worse, a helper still waiting when an embedder's next interpreter starts wakes
 * in it holding a thread state of the old one, and CPython aborts the process: so before an
 * interpreter finalizes (roundtrim_py_gil_interpreter_ending) no job is left waiting for the
 * GIL, and none starts until it is gone. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_GIL_H
#define ROUNDTRIM_RUNTIME_PYTHON_GIL_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* What a job reports. The job writes into storage that gil.c owns, never the caller's:
 * a job may outlive the caller's wait (and the caller's stack frame). */
struct roundtrim_py_result {
    uint64_t count, us, bytes;
};

/* Runs with the GIL held, in the main interpreter; fills *out (zeroed beforehand). Returns
 * RT_SKIP_NONE when it did its job, or why not. */
typedef enum roundtrim_skip (*roundtrim_py_job)(struct roundtrim_py_result *out);

/* How long a cleanup waits for the GIL (the main thread may sit in C code that keeps it); past
 * it the step is skipped for this round (gil_timeout). */
#define ROUNDTRIM_PY_GIL_WAIT_MS 2000

/* Runs job on the helper thread holding the GIL. Waits at most gil_wait_ms for the GIL and then
 * at most run_wait_ms for the job. Returns RT_SKIP_NONE, with the job's results copied to *out,
 * when it ran in time and succeeded; else why not: no_python, no_interpreter, finalizing,
 * caller_holds_gil, exiting, exec, busy, thread_failed, gil_timeout, job_timeout, or the job's
 * own. A job abandoned before it got the GIL never runs; one still running past run_wait_ms
 * finishes on its own, its results are dropped, and every call is refused (busy) until it has
 * ended. */
enum roundtrim_skip roundtrim_py_with_gil(roundtrim_py_job job, struct roundtrim_py_result *out,
                                          unsigned gil_wait_ms, unsigned run_wait_ms);

/* The process is ending: a caller waiting for the GIL or for its job gives up at once
 * (exiting), and no job starts any more. */
void roundtrim_py_gil_exiting(void);

/* The interpreter is about to finalize: called on the thread that finalizes it, holding the GIL
 * (the exit barrier, from threading's or atexit's callbacks; an embedder's Py_FinalizeEx). No job
 * starts in it any more (finalizing), and a job queued, waiting for the GIL or running is waited
 * for (10 s at most), the GIL released meanwhile: no helper may still wait for the GIL once
 * finalization begins. */
void roundtrim_py_gil_interpreter_ending(void);

/* No interpreter runs (Py_FinalizeEx returned, or Py_IsInitialized says none): the next one an
 * embedder starts gets jobs again, and the exit barrier is registered in it anew. Does nothing
 * while a job is still out. */
void roundtrim_py_gil_interpreter_ended(void);

/* Registers the exit barrier of the running interpreter, once: a callback of its shutdown that
 * makes it wait for a job out before it finalizes (roundtrim_py_gil_interpreter_ending). Without
 * it, an interpreter may finalize while the helper is inside PyGILState_Ensure, which then takes
 * runtime locks already freed and the process dies. Called with the GIL held, in the main
 * interpreter: by the round hooks' audit hook as the program starts, and by every job. A job
 * that finds no barrier first asks the main thread for it (a pending call). */
void roundtrim_py_exit_barrier_add(void);

/* How many times an interpreter was seen gone: what was read of an older one (its gc statistics)
 * is not the current one's. */
unsigned roundtrim_py_gil_generation(void);

/* exec begins (true): a job waiting for the GIL gives up, and none starts, until it fails
 * (false). Never blocks. */
void roundtrim_py_gil_exec(bool begun);

/* Ends the helper thread while it is idle, waiting a bounded time (for calls that need a lone
 * thread); the next job starts a new one. A job still running keeps it. */
void roundtrim_py_helper_stop(void);

/* The CPU time jobs have used on the helper thread since start (microseconds): a cleanup's gc
 * and cache release count into the cleanup's cost. */
uint64_t roundtrim_py_jobs_cpu_us(void);

/* In a fork child: the helper thread is gone; forget it. */
void roundtrim_py_gil_fork_child(void);

#endif
