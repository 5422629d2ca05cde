/* The per-thread counter blocks (runtime/alloc/thread_counters.c): what a thread counts reaches
 * the process's totals; a thread that exits leaves its counts in them, and its block goes to the
 * next thread, which counts on from there; roundtrim's own threads, paused counting and disabled
 * counting are left out; on the jemalloc route the bytes are jemalloc's per-thread figures,
 * continued from the block's own count (a fake mallctl here); and the fork child starts from
 * zero. Each test runs in a process of its own (Check's fork mode). */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/alloc/thread_counters.h"
#include "run_suite.h"

static struct roundtrim_traffic totals(void)
{
    struct roundtrim_traffic t;
    roundtrim_counters_total(&t);
    return t;
}

static void totals_are(uint64_t malloc_calls, uint64_t free_calls, uint64_t malloc_bytes,
                       uint64_t free_bytes)
{
    struct roundtrim_traffic t = totals();
    ck_assert_uint_eq(t.malloc_calls, malloc_calls);
    ck_assert_uint_eq(t.free_calls, free_calls);
    ck_assert_uint_eq(t.malloc_bytes, malloc_bytes);
    ck_assert_uint_eq(t.free_bytes, free_bytes);
}

/* Runs fn on a thread of its own and waits for its end (its exit hooks included). */
static void *on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    void *ret;
    ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
    ck_assert_int_eq(pthread_join(t, &ret), 0);
    return ret;
}

/* Counts *arg allocations of 16 bytes and as many frees of 8; returns the thread's block. */
static void *count_some(void *arg)
{
    uint64_t n = *(uint64_t *)arg;
    for (uint64_t i = 0; i < n; i++) {
        roundtrim_count_alloc(16);
        roundtrim_count_free(8);
    }
    return roundtrim_thread_block();
}

START_TEST(totals_start_at_zero)
{
    totals_are(0, 0, 0, 0);
}
END_TEST

START_TEST(a_threads_counts_reach_the_totals)
{
    roundtrim_count_alloc(100);
    roundtrim_count_alloc(200);
    roundtrim_count_free(100);
    totals_are(2, 1, 300, 100);
    ck_assert(roundtrim_thread_counted(roundtrim_thread_block()));
}
END_TEST

/* A thread that exits leaves its counts in the totals; its block goes to the next thread, which
 * counts on from them: however many threads come and go one after another, one block serves. */
START_TEST(exited_threads_keep_their_counts_and_hand_on_their_block)
{
    uint64_t n = 5;
    void *first = on_thread(count_some, &n);
    totals_are(5, 5, 80, 40);
    n = 1;
    for (int i = 0; i < 200; i++)
        ck_assert_ptr_eq(on_thread(count_some, &n), first);
    totals_are(205, 205, 205 * 16, 205 * 8);
    const struct roundtrim_thread_counters *c = first;
    ck_assert_uint_eq(c->malloc_calls, 205); /* cumulative over every thread that owned it */
}
END_TEST

/* Threads alive at once have blocks of their own, more than one page of them. */
#define LIVE 50

struct live {
    pthread_barrier_t *all_counted;
    void *block;
};

static void *count_and_wait(void *arg)
{
    struct live *l = arg;
    uint64_t n = 3;
    l->block = count_some(&n);
    pthread_barrier_wait(l->all_counted);
    return NULL;
}

START_TEST(live_threads_have_blocks_of_their_own)
{
    pthread_t t[LIVE];
    struct live l[LIVE];
    pthread_barrier_t all_counted;
    pthread_barrier_init(&all_counted, NULL, LIVE);
    for (int i = 0; i < LIVE; i++) {
        l[i] = (struct live){&all_counted, NULL};
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_and_wait, &l[i]), 0);
    }
    for (int i = 0; i < LIVE; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < LIVE; i++)
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(l[i].block, l[j].block);
    totals_are(3 * LIVE, 3 * LIVE, 48 * LIVE, 24 * LIVE);
}
END_TEST

/* A thread that becomes roundtrim's own: what it counted stays, what it counts after does not,
 * and its block goes to the next thread. */
static void *count_then_become_internal(void *arg)
{
    (void)arg;
    roundtrim_count_alloc(10);
    void *block = roundtrim_thread_block();
    roundtrim_thread_mark_internal();
    roundtrim_count_alloc(1000);
    ck_assert(!roundtrim_thread_counted(roundtrim_thread_block()));
    return block;
}

START_TEST(internal_threads_are_not_counted)
{
    void *block = on_thread(count_then_become_internal, NULL);
    totals_are(1, 0, 10, 0);
    uint64_t n = 1;
    ck_assert_ptr_eq(on_thread(count_some, &n), block);
    totals_are(2, 1, 26, 8);
}
END_TEST

START_TEST(paused_counting_is_left_out)
{
    roundtrim_count_alloc(10);
    struct roundtrim_thread_counters *saved = roundtrim_counting_pause();
    roundtrim_count_alloc(1000);
    roundtrim_count_free(1000);
    roundtrim_counting_resume(saved);
    roundtrim_count_free(10);
    totals_are(1, 1, 10, 10);
}
END_TEST

START_TEST(threads_after_disable_are_not_counted)
{
    uint64_t n = 2;
    on_thread(count_some, &n);
    roundtrim_counters_disable();
    roundtrim_count_alloc(5);
    on_thread(count_some, &n);
    totals_are(2, 2, 32, 16);
}
END_TEST

/* jemalloc's per-thread cumulative counters, as its mallctl hands them out. */
static __thread uint64_t je_allocated, je_deallocated;
static int mallctl_calls;

static int fake_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
    (void)newp;
    (void)newlen;
    __atomic_add_fetch(&mallctl_calls, 1, __ATOMIC_RELAXED);
    ck_assert_uint_eq(*oldlenp, sizeof(uint64_t *));
    if (strcmp(name, "thread.allocatedp") == 0)
        *(uint64_t **)oldp = &je_allocated;
    else if (strcmp(name, "thread.deallocatedp") == 0)
        *(uint64_t **)oldp = &je_deallocated;
    else
        return 2; /* ENOENT */
    return 0;
}

static int refusing_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                            size_t newlen)
{
    (void)name, (void)oldp, (void)oldlenp, (void)newp, (void)newlen;
    return 2;
}

/* One call through the jemalloc route, as the hooks make it: the thread's block first, then
 * jemalloc's call (which counts `bytes` more on this thread), then the count. */
static void je_alloc(uint64_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    je_allocated += bytes;
    roundtrim_je_count_alloc(c);
}

static void je_free(uint64_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    je_deallocated += bytes;
    roundtrim_je_count_free(c);
}

/* jemalloc had counted on this thread before it registered; it allocates, frees, and allocates
 * through jemalloc's own API (not counted as a call) before it exits. */
static void *je_thread_a(void *arg)
{
    (void)arg;
    je_allocated = 100000;
    je_deallocated = 90000;
    je_alloc(64);
    je_free(32);
    je_allocated += 36; /* mallocx: bytes without a counted call */
    return roundtrim_thread_block();
}

/* The next thread takes A's block: its bytes continue from A's, whatever jemalloc counted on it
 * before. */
static void *je_thread_b(void *arg)
{
    (void)arg;
    je_allocated = 7777;
    je_deallocated = 5555;
    je_alloc(28);
    return roundtrim_thread_block();
}

START_TEST(jemalloc_bytes_continue_from_the_blocks_count)
{
    ck_assert(!roundtrim_counters_use_jemalloc(NULL));
    ck_assert(!roundtrim_counters_use_jemalloc(refusing_mallctl));
    ck_assert(roundtrim_counters_use_jemalloc(fake_mallctl));
    void *a = on_thread(je_thread_a, NULL);
    totals_are(1, 1, 100, 32); /* the 36 bytes of mallocx published at exit */
    ck_assert_ptr_eq(on_thread(je_thread_b, NULL), a);
    totals_are(2, 1, 128, 32);
    ck_assert_int_gt(mallctl_calls, 0);
}
END_TEST

/* On the jemalloc route, what jemalloc counted while counting was paused is left out. */
START_TEST(jemalloc_bytes_while_paused_are_left_out)
{
    roundtrim_count_alloc(8); /* registered on the usable-size route, before jemalloc is known */
    ck_assert(roundtrim_counters_use_jemalloc(fake_mallctl));
    je_alloc(16);
    struct roundtrim_thread_counters *saved = roundtrim_counting_pause();
    je_allocated += 4096; /* roundtrim's own */
    roundtrim_counting_resume(saved);
    je_alloc(32);
    totals_are(3, 0, 56, 0);
}
END_TEST

/* The fork child: traffic starts from zero, the forking thread keeps counting on its block, and
 * the child's threads take the blocks of the parent's others. */
static void *count_one(void *arg)
{
    uint64_t n = 1;
    (void)arg;
    return count_some(&n);
}

static int child_checks(void)
{
    struct roundtrim_traffic t = totals();
    if (t.malloc_calls || t.free_calls || t.malloc_bytes || t.free_bytes)
        return 1;
    void *mine = roundtrim_thread_block();
    roundtrim_count_alloc(16);
    t = totals();
    if (t.malloc_calls != 1 || t.malloc_bytes != 16)
        return 2;
    if (on_thread(count_one, NULL) == mine)
        return 3;
    t = totals();
    return t.malloc_calls == 2 && t.free_calls == 1 && t.malloc_bytes == 32 ? 0 : 4;
}

START_TEST(fork_child_starts_from_zero)
{
    roundtrim_count_alloc(100);
    on_thread(count_one, NULL);
    roundtrim_counters_fork_prepare();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        roundtrim_counters_fork_child();
        _exit(child_checks());
    }
    roundtrim_counters_fork_parent();
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    totals_are(2, 1, 116, 8); /* the parent's own go on */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("thread_counters");
    TCase *tc = tcase_create("thread_counters");
    tcase_add_test(tc, totals_start_at_zero);
    tcase_add_test(tc, a_threads_counts_reach_the_totals);
    tcase_add_test(tc, exited_threads_keep_their_counts_and_hand_on_their_block);
    tcase_add_test(tc, live_threads_have_blocks_of_their_own);
    tcase_add_test(tc, internal_threads_are_not_counted);
    tcase_add_test(tc, paused_counting_is_left_out);
    tcase_add_test(tc, threads_after_disable_are_not_counted);
    tcase_add_test(tc, jemalloc_bytes_continue_from_the_blocks_count);
    tcase_add_test(tc, jemalloc_bytes_while_paused_are_left_out);
    tcase_add_test(tc, fork_child_starts_from_zero);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
