#include "runtime/worker.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/app_threads.h"
#include "runtime/python_gil.h"
#include "runtime/round.h"
#include "runtime/state.h"
#include "runtime/thread_counters.h"
#include "runtime/thread_spawn.h"
#include "runtime/next_alloc.h"
#include "runtime/vm_child.h"

int roundtrim_worker_start_wanted;

enum { WORKER_NONE, WORKER_STARTING, WORKER_RUNNING, WORKER_FAILED, WORKER_PAUSING, WORKER_PAUSED };
static int worker_state = WORKER_NONE;
static sem_t wake;
static __thread bool on_worker;
static pid_t worker_tid;

void roundtrim_worker_init(void)
{
    sem_init(&wake, 0, 0);
}

bool roundtrim_worker_running(void)
{
    return __atomic_load_n(&worker_state, __ATOMIC_SEQ_CST) == WORKER_RUNNING;
}

bool roundtrim_worker_is_self(void)
{
    return on_worker;
}

void roundtrim_worker_wake(void)
{
    if (roundtrim_worker_running())
        sem_post(&wake); /* async-signal-safe */
}

static void add_ms(struct timespec *t, uint64_t ms)
{
    t->tv_sec += (time_t)(ms / 1000);
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* The program's last thread has ended: the worker ends too, so that the last thread to go runs
 * exit(0), the way glibc ends a process whose threads are all gone. Left as NONE, it can be
 * started again should a thread nobody counted still mark a round. */
static bool leave_with_the_program(void)
{
    int running = WORKER_RUNNING;
    if (!__atomic_compare_exchange_n(&worker_state, &running, WORKER_NONE, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return false; /* being paused: the pause decides */
    roundtrim_py_helper_stop();
    on_worker = false; /* exit may run on this thread, and must not wait for itself */
    return true;
}

static void *worker_main(void *arg)
{
    (void)arg;
    on_worker = true;
    __atomic_store_n(&worker_tid, gettid(), __ATOMIC_RELEASE);
    roundtrim_thread_mark_internal();
    struct timespec next_sample;
    clock_gettime(CLOCK_MONOTONIC, &next_sample);
    uint64_t period = 0;
    for (;;) {
        int pausing = WORKER_PAUSING; /* the top of the loop holds no lock: a safe point */
        if (__atomic_compare_exchange_n(&worker_state, &pausing, WORKER_PAUSED, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return NULL;
        roundtrim_round_run_pending();
        if (roundtrim_app_threads_gone() && leave_with_the_program())
            return NULL;
        /* The period changes once rounds are recorded (peak samples): look again each time. */
        uint64_t want = roundtrim_round_sample_period_ms();
        if (want != period) {
            period = want;
            clock_gettime(CLOCK_MONOTONIC, &next_sample);
            add_ms(&next_sample, period);
        }
        if (period == 0) {
            sem_wait(&wake); /* EINTR or a post: either way look at what is pending */
            continue;
        }
        if (sem_clockwait(&wake, CLOCK_MONOTONIC, &next_sample) != 0 && errno == ETIMEDOUT) {
            roundtrim_round_sample();
            clock_gettime(CLOCK_MONOTONIC, &next_sample);
            add_ms(&next_sample, period);
        }
    }
    return NULL;
}

bool roundtrim_worker_ensure(void)
{
    int expected = WORKER_NONE;
    if (!__atomic_compare_exchange_n(&worker_state, &expected, WORKER_STARTING, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        /* Another thread is starting it: it will look at everything pending once running. */
        return expected != WORKER_FAILED;
    }
    /* The worker must never run the application's signal handlers. What pthread_create
     * allocates on this thread is roundtrim's, not the round's. */
    struct roundtrim_thread_counters *counting = roundtrim_counting_pause();
    int rc = roundtrim_spawn_thread(worker_main, NULL, "roundtrim", 0);
    roundtrim_counting_resume(counting);
    if (rc != 0) {
        __atomic_store_n(&worker_state, WORKER_FAILED, __ATOMIC_SEQ_CST);
        roundtrim_warn_once_errno("cannot start the worker thread; rounds are not recorded", rc);
        return false;
    }
    __atomic_store_n(&worker_state, WORKER_RUNNING, __ATOMIC_SEQ_CST);
    sem_post(&wake);
    return true;
}

static void sleep_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

bool roundtrim_worker_pause(void)
{
    int running = WORKER_RUNNING;
    if (on_worker || !__atomic_compare_exchange_n(&worker_state, &running, WORKER_PAUSING, false,
                                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return false;
    sem_post(&wake);
    /* A round in progress finishes first; both waits are bounded (2 s, then 1 s for the kernel
     * to remove the thread). Past them the caller goes on, as it would without us. */
    for (int i = 0; i < 2000 && __atomic_load_n(&worker_state, __ATOMIC_SEQ_CST) != WORKER_PAUSED;
         i++)
        sleep_ms(1);
    pid_t tid = __atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE);
    for (int i = 0; i < 1000 && __atomic_load_n(&worker_state, __ATOMIC_SEQ_CST) == WORKER_PAUSED;
         i++) {
        if (tgkill(getpid(), tid, 0) != 0 && errno == ESRCH)
            break;
        sleep_ms(1);
    }
    return true;
}

void roundtrim_worker_resume(void)
{
    int pausing = WORKER_PAUSING; /* it never stopped: it goes on as it was */
    if (__atomic_compare_exchange_n(&worker_state, &pausing, WORKER_RUNNING, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return;
    int paused = WORKER_PAUSED;
    if (__atomic_compare_exchange_n(&worker_state, &paused, WORKER_NONE, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST) &&
        roundtrim_worker_ensure())
        roundtrim_worker_wake(); /* boundaries seen meanwhile are pending: they run now */
}

void roundtrim_worker_start_from_app(void)
{
    if (on_worker || roundtrim_in_vm_child())
        return;
    int saved_errno = errno; /* inside the application's malloc: errno is theirs */
    /* Clear first: pthread_create allocates and would come back here. */
    if (__atomic_exchange_n(&roundtrim_worker_start_wanted, 0, __ATOMIC_SEQ_CST) &&
        roundtrim_worker_ensure())
        roundtrim_worker_wake();
    roundtrim_fast_path_resume();
    errno = saved_errno;
}

void roundtrim_worker_start_soon(void)
{
    __atomic_store_n(&roundtrim_worker_start_wanted, 1, __ATOMIC_SEQ_CST);
    roundtrim_fast_path_suspend(); /* the next malloc or free takes the slow path */
}

static bool parent_had_worker;

bool roundtrim_worker_parent_had(void)
{
    return parent_had_worker;
}

void roundtrim_worker_fork_child(void)
{
    parent_had_worker = roundtrim_worker_running();
    /* Threads do not survive fork: the child starts its own worker when it needs one. */
    __atomic_store_n(&worker_state, WORKER_NONE, __ATOMIC_SEQ_CST);
    __atomic_store_n(&roundtrim_worker_start_wanted, 0, __ATOMIC_SEQ_CST);
    roundtrim_fast_path_resume();
    on_worker = false;
    sem_init(&wake, 0, 0);
}
