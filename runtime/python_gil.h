/* Running a short piece of C under the GIL for the worker thread, with a bounded wait.
 *
 * The work runs on a helper thread of roundtrim's own, never on the caller: PyGILState_Ensure
 * cannot time out, and a thread that asks for the GIL while the interpreter finalizes is ended
 * by CPython (pthread_exit before 3.14) or blocked for good (3.14). Either fate stays with the
 * helper; the caller only waits, and gives up after the bound. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_GIL_H
#define ROUNDTRIM_RUNTIME_PYTHON_GIL_H

#include <stdbool.h>
#include <stdint.h>

/* Runs with the GIL held, in the main interpreter. Returns NULL when it did its job, or a stable
 * name saying why not. */
typedef const char *(*roundtrim_py_job)(void *arg);

/* Why the last job did not run (stable names, NULL when it ran): "no_python", "finalizing",
 * "caller_holds_gil", "busy", "gil_timeout", "job_timeout", "thread_failed", or the job's own. */
const char *roundtrim_python_skip_reason(void);

/* Runs job(arg) on the helper thread holding the GIL. Waits at most gil_wait_ms for the GIL and
 * then at most run_wait_ms for the job. False (see roundtrim_python_skip_reason) when it did
 * not run or failed; a job abandoned before it got the GIL never runs. */
bool roundtrim_py_with_gil(roundtrim_py_job job, void *arg, unsigned gil_wait_ms,
                           unsigned run_wait_ms);

/* In a fork child: the helper thread is gone; forget it. */
void roundtrim_py_gil_fork_child(void);

#endif
