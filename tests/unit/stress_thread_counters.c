/* The counter blocks under thread churn: producer threads each start short-lived threads one
 * after another (every one counts a few calls and exits, handing its block on) while counting
 * themselves; the summing thread takes totals all along. Totals never go down (a block's counts
 * are cumulative over its owners: nothing is lost at a handover) and end at exactly what was
 * counted. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>

#include "runtime/alloc/thread_counters.h"
#include "run_suite.h"
#include "stress.h"

#define PRODUCERS    3
#define THREADS_EACH 300
#define CALLS_EACH   200u

static void *short_lived(void *arg)
{
    uint64_t bytes = (uintptr_t)arg;
    for (uint32_t i = 0; i < CALLS_EACH; i++) {
        roundtrim_count_alloc(bytes);
        roundtrim_count_free(bytes / 2);
    }
    return NULL;
}

static void produce(int id, void *arg)
{
    (void)arg;
    for (int t = 0; t < THREADS_EACH; t++) {
        pthread_t th;
        uintptr_t bytes = 16 * (uintptr_t)(1 + (id + t) % 7);
        ck_assert_int_eq(pthread_create(&th, NULL, short_lived, (void *)bytes), 0);
        roundtrim_count_alloc(1); /* the producer counts too, meanwhile */
        pthread_join(th, NULL);
    }
}

static void consume(void *arg)
{
    struct roundtrim_traffic *last = arg, now;
    roundtrim_counters_total(&now);
    ck_assert_uint_ge(now.malloc_calls, last->malloc_calls);
    ck_assert_uint_ge(now.free_calls, last->free_calls);
    ck_assert_uint_ge(now.malloc_bytes, last->malloc_bytes);
    ck_assert_uint_ge(now.free_bytes, last->free_bytes);
    *last = now;
}

START_TEST(thread_churn_and_totals)
{
    struct roundtrim_traffic last = {0}, want = {0}, end;
    struct stress s = {PRODUCERS, produce, consume, &last};
    stress_run(&s);
    for (int id = 0; id < PRODUCERS; id++)
        for (int t = 0; t < THREADS_EACH; t++) {
            uint64_t bytes = 16 * (uint64_t)(1 + (id + t) % 7);
            want.malloc_calls += CALLS_EACH + 1;
            want.free_calls += CALLS_EACH;
            want.malloc_bytes += CALLS_EACH * bytes + 1;
            want.free_bytes += CALLS_EACH * (bytes / 2);
        }
    roundtrim_counters_total(&end);
    ck_assert_uint_eq(end.malloc_calls, want.malloc_calls);
    ck_assert_uint_eq(end.free_calls, want.free_calls);
    ck_assert_uint_eq(end.malloc_bytes, want.malloc_bytes);
    ck_assert_uint_eq(end.free_bytes, want.free_bytes);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stress_thread_counters");
    TCase *tc = tcase_create("stress_thread_counters");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, thread_churn_and_totals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
