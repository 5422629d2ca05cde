#include "runtime/threads/worker_thread.h"

#include <errno.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>

#include "runtime/alloc/next_alloc.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/clock.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/core/libc_later.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"
#include "runtime/threads/thread_spawn.h"

int roundtrim_worker_start_wanted;

enum { WORKER_NONE, WORKER_STARTING, WORKER_RUNNING, WORKER_FAILED, WORKER_PAUSING, WORKER_PAUSED };
static int worker_state = WORKER_NONE;
static sem_t wake;
static __thread bool on_worker;
static pid_t worker_tid;
static roundtrim_worker_body_fn body;

static bool wake_ready; /* sem_init'ed: at the first start, not in every process's start */

void roundtrim_worker_thread_init(roundtrim_worker_body_fn fn)
{
    body = fn;
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

bool roundtrim_worker_leave(void)
{
    int running = WORKER_RUNNING;
    if (!__atomic_compare_exchange_n(&worker_state, &running, WORKER_NONE, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return false; /* being paused: the pause decides */
    return true;
}

static void *worker_main(void *arg)
{
    (void)arg;
    on_worker = true;
    __atomic_store_n(&worker_tid, roundtrim_gettid(), __ATOMIC_RELEASE);
    roundtrim_thread_mark_internal();
    struct timespec next_wake = roundtrim_deadline_ms(0);
    uint64_t period = 0;
    bool timed_out = false;
    for (;;) {
        int pausing = WORKER_PAUSING; /* the top of the loop holds no lock: a safe point */
        if (__atomic_compare_exchange_n(&worker_state, &pausing, WORKER_PAUSED, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return NULL;
        uint64_t want = period;
        if (!body(timed_out, &want)) {
            on_worker = false; /* exit may run on this thread, and must not wait for itself */
            return NULL;
        }
        /* The period may change between wakes: look again each time. */
        if (want != period || timed_out) {
            period = want;
            next_wake = roundtrim_deadline_ms(period);
        }
        timed_out = false;
        if (period == 0) {
            sem_wait(&wake); /* EINTR or a post: either way look at what is pending */
            continue;
        }
        if (roundtrim_sem_wait_monotonic(&wake, &next_wake) != 0 && errno == ETIMEDOUT)
            timed_out = true;
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
    /* Only the thread that moved the state from NONE gets here; nobody posts before RUNNING. */
    if (!wake_ready) {
        sem_init(&wake, 0, 0);
        wake_ready = true;
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
        roundtrim_sleep_us(1000);
    if (__atomic_load_n(&worker_state, __ATOMIC_SEQ_CST) == WORKER_PAUSED)
        roundtrim_thread_wait_gone(__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE), 1000);
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
    wake_ready = true;
}
