#include "runtime/rounds/round.h"

#include <pthread.h>
#include <string.h>

#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/boundary/signal_rounds.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/output/holders_record.h"
#include "runtime/output/round_record.h"
#include "runtime/output/metrics_file.h"
#include "runtime/output/sites_record.h"
#include "runtime/python/bridge.h"
#include "runtime/python/holders.h"
#include "runtime/rounds/cleanup.h"
#include "runtime/rounds/diagnose.h"
#include "runtime/rounds/round_measure.h"
#include "runtime/rounds/round_sync.h"
#include "runtime/rounds/rss_peak.h"
#include "runtime/sites/object_sampler.h"

/* The order of a round: measure, clean up when due, record, diagnose; then the allocation
 * sites and the holder search. Each step lives with its concern (round_measure.c, cleanup.c,
 * output/); the worker's samples are in round_sampling.c, the exit path in round_exit.c. */

/* Serialises rounds with the exit summary; the worker is the only other user. */
static pthread_mutex_t round_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t round_no;         /* rounds recorded, merged ones included */
static uint64_t rounds_unwritten; /* of those, the ones whose record the log could not take */
static bool in_round;             /* a boundary was taken from the queue and is being recorded */

void roundtrim_round_lock(void)
{
    pthread_mutex_lock(&round_lock);
}

bool roundtrim_round_trylock(void)
{
    return pthread_mutex_trylock(&round_lock) == 0;
}

void roundtrim_round_unlock(void)
{
    pthread_mutex_unlock(&round_lock);
}

bool roundtrim_round_in_progress(void)
{
    return __atomic_load_n(&in_round, __ATOMIC_ACQUIRE);
}

uint64_t roundtrim_round_recorded(void)
{
    return __atomic_load_n(&round_no, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&rounds_unwritten, __ATOMIC_ACQUIRE);
}

static void finish(struct roundtrim_round_record *r)
{
    r->rss_after = roundtrim_rss_bytes();
    roundtrim_rss_peak_next(r->rss_after, roundtrim_config()->peak_reset);
    if (!roundtrim_round_record_write(r))
        __atomic_add_fetch(&rounds_unwritten, 1, __ATOMIC_RELEASE);
    roundtrim_diagnose_round(r);
    roundtrim_metrics_file_update(r, r->round, roundtrim_cleanup_count(),
                                  roundtrim_diagnose_latest());
}

/* The time from the previous boundary (the first: from the library's start) to this one, on the
 * monotonic clock. */
static uint64_t prev_boundary_us;

void roundtrim_round_clock_start(void)
{
    prev_boundary_us = roundtrim_now_us();
    roundtrim_round_sampling_round_done();
}

static uint64_t round_time_us(uint64_t mono_us)
{
    uint64_t d = prev_boundary_us && mono_us > prev_boundary_us ? mono_us - prev_boundary_us : 0;
    if (mono_us > prev_boundary_us)
        prev_boundary_us = mono_us;
    return d;
}

/* Whether one of the rounds round_no+1 .. last_round is a cleanup round. */
static bool cleans_any(uint64_t first, uint64_t last_round)
{
    for (uint64_t n = first; n <= last_round; n++)
        if (roundtrim_round_cleans(roundtrim_config(), n))
            return true;
    return false;
}

/* Records one boundary (round_lock held). */
/* Once the latest diagnosis says the live memory leaks, the holder search walks on; a walk
 * that ended is recorded. Not before: any Python job of a round shifts when the program's
 * threads run, and frees moved across a boundary would cost an undecided verdict its
 * persistence. */
static void holders_step(uint64_t round)
{
    /* Made in the program's first round, whose memory no diagnosis compares. */
    static bool prepared;
    if (roundtrim_config()->holders && !prepared && round <= 1)
        prepared = roundtrim_python_holders_prepare();
    const struct roundtrim_diagnosis *d = roundtrim_diagnose_latest();
    if (!roundtrim_config()->holders || !d || d->skipped || d->cause != RT_CAUSE_LEAK)
        return;
    struct roundtrim_holders_walk walk;
    if (roundtrim_python_holders_step(round, &walk))
        roundtrim_holders_record(round, &walk);
}

static void run_round(const struct roundtrim_boundary_snap *s, uint64_t merged)
{
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    r.round = round_no + merged + 1;
    r.merged_rounds = merged;
    r.source = roundtrim_source_name(s->src);
    r.hook = s->src == ROUNDTRIM_SRC_PYTHON ? s->label : NULL;
    roundtrim_round_measure(&r, s);
    roundtrim_cleanup_memory_read(&r);
    r.round_us = round_time_us(s->mono_us);
    roundtrim_cleanup_round_time(r.round_us);
    /* Said by the first round marked otherwise than by that signal (a round by signal recorded
     * now was marked before), or else by the exit record without a line on stderr: programs
     * commonly restore the default action while they finalize. */
    if (s->src != ROUNDTRIM_SRC_SIGNAL &&
        (r.signal_rounds_off = roundtrim_signal_rounds_off_take()))
        roundtrim_signal_rounds_off_warn(r.signal_rounds_off);
    if (cleans_any(round_no + 1, r.round)) {
        if (roundtrim_round_exiting())
            roundtrim_cleanup_skipped_at_exit(&r);
        else
            roundtrim_cleanup_run(&r, false);
    }
    roundtrim_cleanup_steps_into_record(&r);
    roundtrim_python_holders_cost_take(&r.holders_gil_us, &r.holders_steps);
    finish(&r);
    /* dladdr takes the loader's lock, which an _exit from a signal handler may interrupt. */
    if (!roundtrim_round_inline_async())
        roundtrim_sites_record(r.round - merged, r.round, s->wall_s);
    if (!roundtrim_round_process_ending()) {
        roundtrim_python_objects_attach();
        holders_step(r.round);
    }
    __atomic_store_n(&round_no, r.round, __ATOMIC_RELEASE);
    roundtrim_round_sampling_round_done();
}

bool roundtrim_round_run_one_locked(void)
{
    struct roundtrim_boundary_snap s;
    uint64_t merged;
    __atomic_store_n(&in_round, true, __ATOMIC_RELEASE);
    bool took = roundtrim_boundary_take(&s, &merged);
    if (took)
        run_round(&s, merged);
    __atomic_store_n(&in_round, false, __ATOMIC_RELEASE);
    return took;
}

void roundtrim_round_run_pending(void)
{
    for (;;) {
        pthread_mutex_lock(&round_lock);
        bool took = roundtrim_round_run_one_locked();
        pthread_mutex_unlock(&round_lock);
        if (!took)
            return;
    }
}
void roundtrim_round_fork_child(void)
{
    pthread_mutex_init(&round_lock, NULL);
    roundtrim_boundary_fork_child();
    roundtrim_rss_peak_fork_child();
    roundtrim_diagnose_fork_child();
    roundtrim_round_measure_fork_child();
    roundtrim_cleanup_fork_child();
    roundtrim_round_sampling_fork_child();
    roundtrim_round_exit_fork_child();
    prev_boundary_us = roundtrim_now_us();
    in_round = false;
    round_no = rounds_unwritten = 0;
}
