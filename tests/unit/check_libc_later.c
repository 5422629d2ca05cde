/* What stands in for the glibc functions newer than the baseline where libc lacks them
 * (runtime/core/libc_later.c): the lookup is stood in by one that finds nothing, as on glibc
 * 2.17, and each stand-in is held to what this machine's glibc does. */
#include <check.h>
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "run_suite.h"
#include "runtime/core/libc_later.h"
#include "runtime/core/real_dlsym.h"

/* The lookup of an older libc: none of the later functions is there. */
void *roundtrim_default_symbol(const char *name)
{
    (void)name;
    return NULL;
}

static double monotonic_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

START_TEST(signal_names_are_glibcs)
{
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        const char *want = sigabbrev_np(sig);
        const char *got = roundtrim_signal_abbrev(sig);
        if (!want)
            ck_assert_ptr_null(got);
        else
            ck_assert_msg(got && strcmp(got, want) == 0, "signal %d: %s, not %s", sig,
                          got ? got : "NULL", want);
    }
    ck_assert_ptr_null(roundtrim_signal_abbrev(0));
    ck_assert_ptr_null(roundtrim_signal_abbrev(SIGRTMIN));
    ck_assert_ptr_null(roundtrim_signal_abbrev(-1));
}
END_TEST

/* Waits on sem (count 0 or 1) until ms from now on the monotonic clock (negative: past); the
 * seconds it took. */
static double wait_seconds(unsigned count, long ms, int *rc, int *err)
{
    sem_t sem;
    sem_init(&sem, 0, count);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += ms % 1000 * 1000000L;
    if (deadline.tv_nsec < 0) {
        deadline.tv_nsec += 1000000000L;
        deadline.tv_sec--;
    } else if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_nsec -= 1000000000L;
        deadline.tv_sec++;
    }
    double start = monotonic_s();
    *rc = roundtrim_sem_wait_monotonic(&sem, &deadline);
    *err = errno;
    return monotonic_s() - start;
}

START_TEST(a_monotonic_deadline_times_out_there)
{
    int rc, err;
    double waited = wait_seconds(0, 50, &rc, &err);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(err, ETIMEDOUT);
    ck_assert_msg(waited >= 0.045 && waited < 1.0, "waited %.3f s", waited);
}
END_TEST

START_TEST(a_posted_semaphore_or_a_past_deadline_returns_at_once)
{
    int rc, err;
    ck_assert(wait_seconds(1, -1000, &rc, &err) < 0.5);
    ck_assert_int_eq(rc, 0);
    ck_assert(wait_seconds(0, -1000, &rc, &err) < 0.5);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(err, ETIMEDOUT);
}
END_TEST

static void never(void *obj)
{
    (void)obj;
}

START_TEST(no_thread_exit_call_says_so)
{
    static char dso;
    ck_assert(!roundtrim_thread_atexit(never, NULL, &dso));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("libc_later");
    TCase *tc = tcase_create("libc_later");
    tcase_add_test(tc, signal_names_are_glibcs);
    tcase_add_test(tc, a_monotonic_deadline_times_out_there);
    tcase_add_test(tc, a_posted_semaphore_or_a_past_deadline_returns_at_once);
    tcase_add_test(tc, no_thread_exit_call_says_so);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
