#include "runtime/rounds/worker.h"

#include "runtime/python/gil.h"
#include "runtime/rounds/round.h"
#include "runtime/threads/app_threads.h"

static bool worker_body(bool timed_out, uint64_t *period_ms)
{
    if (timed_out)
        roundtrim_round_sample();
    roundtrim_round_run_pending();
    /* The program's last thread has ended: the worker ends too, so that the last thread to go
     * runs exit(0), the way glibc ends a process whose threads are all gone. */
    if (roundtrim_app_threads_gone() && roundtrim_worker_leave()) {
        roundtrim_py_helper_stop();
        return false;
    }
    /* The period changes once rounds are recorded (peak samples). */
    *period_ms = roundtrim_round_sample_period_ms();
    return true;
}

void roundtrim_worker_init(void)
{
    roundtrim_worker_thread_init(worker_body);
}
