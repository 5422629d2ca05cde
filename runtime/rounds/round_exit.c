#include "runtime/rounds/round.h"

#include <string.h>

#include "runtime/boundary/boundary.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/output/log_writer.h"
#include "runtime/output/summary_record.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/rounds/cleanup.h"
#include "runtime/rounds/diagnose.h"
#include "runtime/rounds/round_sync.h"
#include "runtime/rounds/rss_peak.h"
#include "runtime/threads/worker_thread.h"

static bool exiting;    /* the process is ending: rounds are still recorded, nothing is cleaned */
static bool exit_begun; /* the exit path ran (exit, or _exit): once per process */
/* Set on a thread that ends the process through _exit, which may be called from a signal handler
 * that interrupted malloc or the driver: when it records rounds itself it reads nothing that
 * takes the allocator's or the driver's locks. */
static bool exit_async;
static __thread bool exit_inline;

bool roundtrim_round_exiting(void)
{
    return __atomic_load_n(&exiting, __ATOMIC_ACQUIRE);
}

bool roundtrim_round_process_ending(void)
{
    return exit_inline || roundtrim_round_exiting() || roundtrim_py_finalizing();
}

bool roundtrim_round_inline(void)
{
    return exit_inline;
}

bool roundtrim_round_inline_async(void)
{
    return exit_inline && exit_async;
}

/* Boundaries seen before exit get their records within the budget: the worker finishes them
 * (woken, and waited for), or, when it does not run (a signal to a native program that never
 * allocated again), the exiting thread records them itself; cleanups are skipped either way. */
static void drain_before_exit(uint64_t deadline_us)
{
    while (roundtrim_now_us() < deadline_us) {
        if (!roundtrim_boundary_pending() && !roundtrim_round_in_progress())
            return; /* all recorded, or only boundaries merged into none (counted below) */
        if (roundtrim_worker_running() && !roundtrim_worker_is_self()) {
            roundtrim_worker_wake();
            roundtrim_sleep_us(2000);
        } else if (roundtrim_round_trylock()) {
            exit_inline = exit_async;
            bool took = roundtrim_round_run_one_locked();
            exit_inline = false;
            roundtrim_round_unlock();
            if (!took)
                roundtrim_sleep_us(
                    1000); /* a producer on another thread is still filling its slot */
        } else {
            roundtrim_sleep_us(1000);
        }
    }
}

/* Takes round_lock within the budget; false when a round still runs at the deadline. */
static bool lock_until(uint64_t deadline_us)
{
    while (!roundtrim_round_trylock()) {
        if (roundtrim_now_us() >= deadline_us)
            return false;
        roundtrim_sleep_us(1000);
    }
    return true;
}

/* The last record of a program image: "exit", or "exec" when another program replaces it. */
static void summary_record(const char *event, bool locked)
{
    /* Without the lock, a first record may be opening the log right now: write only into a log
     * already open. */
    if (!roundtrim_log_started() && !(locked && roundtrim_boundaries_seen() > 0))
        return;
    /* The rounds since the last diagnosis get theirs (not at an exec: the program goes on
     * when it fails, and a new one does not inherit the window). */
    if (locked && strcmp(event, "exit") == 0)
        roundtrim_diagnose_exit();
    uint64_t seen = roundtrim_boundaries_seen(), recorded = roundtrim_round_recorded();
    uint64_t rss = roundtrim_rss_bytes();
    struct roundtrim_summary sum = {
        .rounds = recorded,
        .rounds_unrecorded = seen > recorded ? seen - recorded : 0,
        .cleanups = roundtrim_cleanup_count(),
        .rss = rss,
        .rss_peak = roundtrim_rss_peak_round(rss, roundtrim_config()->peak_reset, false),
    };
    roundtrim_summary_record(event, &sum);
}

void roundtrim_round_at_exit(void)
{
    if (__atomic_exchange_n(&exit_begun, true, __ATOMIC_ACQ_REL))
        return;
    uint64_t deadline = roundtrim_now_us() + roundtrim_config()->exit_budget_ms * 1000u;
    __atomic_store_n(&exiting, true, __ATOMIC_RELEASE);
    roundtrim_python_exiting(); /* a gc waiting for the GIL gives up at once */
    drain_before_exit(deadline);
    /* The lock is kept: no round may touch libraries that are being finalized from here on. A
     * round still running past the budget is counted as unrecorded and may still land later. */
    summary_record("exit", lock_until(deadline));
}

void roundtrim_round_at_exec(void)
{
    if (__atomic_exchange_n(&exit_begun, true, __ATOMIC_ACQ_REL))
        return; /* exec from an exit handler: the exit record is written */
    uint64_t deadline = roundtrim_now_us() + roundtrim_config()->exit_budget_ms * 1000u;
    /* exec is async-signal-safe and may follow a fork in a threaded parent: rounds recorded on
     * this thread read nothing that takes the allocator's or the driver's locks. The
     * interpreter is left as it is, since a failed exec returns to it. */
    exit_async = true;
    __atomic_store_n(&exiting, true, __ATOMIC_RELEASE);
    roundtrim_python_exec(true); /* the thread calling exec may hold the GIL a gc waits for */
    drain_before_exit(deadline);
    bool locked = lock_until(deadline);
    summary_record("exec", locked);
    /* A failed exec carries on: rounds and cleanups resume, and its exit writes its own record. */
    exit_async = false;
    __atomic_store_n(&exiting, false, __ATOMIC_RELEASE);
    roundtrim_python_exec(false);
    if (locked)
        roundtrim_round_unlock();
    __atomic_store_n(&exit_begun, false, __ATOMIC_RELEASE);
}

void roundtrim_round_at_fast_exit(void)
{
    exit_async = true;
    roundtrim_round_at_exit();
}

bool roundtrim_round_exit_wanted(void)
{
    return roundtrim_log_started() || roundtrim_boundaries_seen() > 0;
}
void roundtrim_round_exit_fork_child(void)
{
    exiting = exit_begun = exit_async = false;
}
