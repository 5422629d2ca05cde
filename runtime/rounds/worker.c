#include "runtime/rounds/worker.h"

#include "runtime/output/no_rounds.h"
#include "runtime/python/gil.h"
#include "runtime/rounds/round.h"
#include "runtime/threads/app_threads.h"

/* The sample period last asked for: a wake for the no-rounds note alone takes no sample. */
static uint64_t sample_ms;

static bool worker_body(bool timed_out, uint64_t *period_ms)
{
    if (timed_out) {
        roundtrim_no_rounds_write_when_due();
        if (sample_ms)
            roundtrim_round_sample();
    }
    roundtrim_round_run_pending();
    /* The program's last thread has ended: the worker ends too, so that the last thread to go
     * runs exit(0), the way glibc ends a process whose threads are all gone. */
    if (roundtrim_app_threads_gone() && roundtrim_worker_leave()) {
        roundtrim_py_helper_stop();
        return false;
    }
    /* The period changes once rounds are recorded (peak samples); the worker also wakes when
     * the no-rounds note falls due. */
    sample_ms = roundtrim_round_sample_period_ms();
    uint64_t note_ms = roundtrim_no_rounds_wait_ms();
    *period_ms = note_ms && (!sample_ms || note_ms < sample_ms) ? note_ms : sample_ms;
    return true;
}

void roundtrim_worker_init(void)
{
    roundtrim_worker_thread_init(worker_body);
}
