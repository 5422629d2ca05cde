/* Exact counts while threads come and go between rounds, and in a fork child. Every thread adds
 * what it allocates and frees, as the allocator reports it (usable sizes), to the tally of the
 * round it is in; the program prints the tallies, and a test compares them with roundtrim's
 * records. At every boundary the program's own threads are idle.
 *
 *   thread_turnover threads
 *     round 1: helper threads start and wait; the round signal ends the round;
 *     round 2: a thread that has allocated nothing yet makes the process's first call after
 *              the signal, which starts roundtrim's worker on that thread (roundtrim's own
 *              allocations there are not the program's), allocates and exits; three threads
 *              allocate, keep blocks and exit; two more allocate and stay;
 *     round 3: those two free blocks the exited threads kept, allocate, exit; one more comes
 *              and goes;
 *     round 4: the main thread frees everything that is left.
 *   thread_turnover fork
 *     the parent allocates 32 MiB in all and forks; the child ends its first round (starting
 *     its own worker), allocates in its second and prints its tally with its pid.
 *   thread_turnover extended   (jemalloc only)
 *     blocks allocated or freed through jemalloc's own API (mallocx, sdallocx) by the main
 *     thread, each followed by a counted call of the same kind, and by a thread whose last call
 *     before exiting is a mallocx: their bytes are tallied, not their calls (roundtrim does not
 *     see those calls).
 *
 * Threads are created only once exited threads have left their stacks for reuse (round 1's
 * helpers), so that creating one allocates nothing; their stacks are small, so that glibc's
 * cache of stacks keeps them all (freeing one frees its TLS vector too). */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "round_sync.h"

#include "launcher_signal.h"

#define ROUNDS  5 /* tallies for rounds 1..4; index 0 unused */
#define HELPERS 8
#define SLOTS   8 /* one per thread that allocates */
#define KEEP    4 /* blocks each keeps */

struct tally {
    unsigned long mallocs, frees, malloc_bytes, free_bytes;
};

static struct tally tally[ROUNDS];
static int round_now = 1;       /* the round the program is in */
static void *kept[SLOTS][KEEP]; /* blocks one thread keeps, freed by another in a later round */
static int stage;               /* what the waiting threads may do next */

static void add(unsigned long *field, unsigned long n)
{
    __atomic_add_fetch(field, n, __ATOMIC_RELAXED);
}

static void *tally_alloc(void *p)
{
    struct tally *t = &tally[__atomic_load_n(&round_now, __ATOMIC_ACQUIRE)];
    add(&t->mallocs, 1);
    add(&t->malloc_bytes, malloc_usable_size(p));
    return p;
}

static void tally_free(void *p)
{
    struct tally *t = &tally[__atomic_load_n(&round_now, __ATOMIC_ACQUIRE)];
    add(&t->frees, 1);
    add(&t->free_bytes, malloc_usable_size(p));
    free(p);
}

/* A call roundtrim does not see; its bytes all the same. */
static void tally_unseen(unsigned long *bytes, void *p)
{
    add(bytes, malloc_usable_size(p));
}

static void free_kept(int slot)
{
    for (int i = 0; i < KEEP; i++) {
        if (kept[slot][i])
            tally_free(kept[slot][i]);
        kept[slot][i] = NULL;
    }
}

static void wait_stage(int want)
{
    while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) < want)
        sched_yield();
}

static void set_stage(int s)
{
    __atomic_store_n(&stage, s, __ATOMIC_RELEASE);
}

static int end_round(void)
{
    int done = __atomic_load_n(&round_now, __ATOMIC_ACQUIRE);
    if (end_round_and_wait(done - 1) != 0)
        return -1;
    __atomic_store_n(&round_now, done + 1, __ATOMIC_RELEASE);
    return 0;
}

/* The allocations of one thread in one round: every kind, some blocks kept in its slot. */
static void churn(int slot, unsigned seed)
{
    for (unsigned i = 0; i < 3 * KEEP; i++) {
        void *p = tally_alloc(malloc(40 + (seed * 131 + i * 977) % 9000));
        if (i % 3 == 0)
            kept[slot][i / 3] = p;
        else
            tally_free(p);
    }
    tally_free(tally_alloc(calloc(7, 300 + seed)));
    void *a = NULL;
    if (posix_memalign(&a, 64, 2000 + seed) == 0)
        tally_free(tally_alloc(a));
    void *r = tally_alloc(malloc(100));
    size_t old = malloc_usable_size(r);
    r = realloc(r, 20000 + seed);
    add(&tally[__atomic_load_n(&round_now, __ATOMIC_ACQUIRE)].frees, 1);
    add(&tally[__atomic_load_n(&round_now, __ATOMIC_ACQUIRE)].free_bytes, old);
    tally_free(tally_alloc(r));
}

static void *helper(void *arg)
{
    (void)arg;
    wait_stage(2);
    return NULL;
}

static void *from_main; /* a block the main thread allocates and the first thread frees */

/* Its first call is the process's first after the round signal: a free, which starts roundtrim's
 * worker on this thread before the thread has counters of its own (roundtrim's allocations there
 * are not the program's). Then it allocates in round 2 and exits. */
static void *first_call_starts_worker(void *arg)
{
    (void)arg;
    wait_stage(1);
    tally_free(from_main);
    churn(0, 1);
    set_stage(2);
    return NULL;
}

static void *short_lived(void *arg)
{
    int slot = (int)(long)arg;
    churn(slot, 10 + (unsigned)slot);
    return NULL;
}

/* Slots 4 and 5: allocate in round 2, stay idle over the boundary, then free the blocks of
 * two threads that exited (slots 0-3) and their own, allocate again and exit. */
static void *across_boundary(void *arg)
{
    int slot = (int)(long)arg;
    churn(slot, 20 + (unsigned)slot);
    set_stage(slot - 1); /* 3, then 4: idle */
    wait_stage(5);
    free_kept(2 * (slot - 4));
    free_kept(2 * (slot - 4) + 1);
    free_kept(slot);
    churn(slot, 40 + (unsigned)slot);
    return NULL;
}

static pthread_t start(void *(*fn)(void *), long arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    if (pthread_create(&t, &attr, fn, (void *)arg) != 0)
        _exit(5);
    pthread_attr_destroy(&attr);
    return t;
}

static void run_thread(void *(*fn)(void *), long arg)
{
    pthread_join(start(fn, arg), NULL);
}

static void print_tallies(int first, int last)
{
    for (int r = first; r <= last; r++)
        printf("{\"pid\":%d,\"round\":%d,\"malloc_calls\":%lu,\"free_calls\":%lu,"
               "\"malloc_bytes\":%lu,\"free_bytes\":%lu}\n",
               (int)getpid(), r, tally[r].mallocs, tally[r].frees, tally[r].malloc_bytes,
               tally[r].free_bytes);
}

static int threads(void)
{
    pthread_t helpers[HELPERS], first, stay[2];
    for (int i = 0; i < HELPERS; i++)
        helpers[i] = start(helper, 0);
    first = start(first_call_starts_worker, 0);
    from_main = tally_alloc(malloc(1000));
    /* Round 1 ends in the signal handler; nothing allocates until the first thread's free. */
    signal_from_launcher(SIGUSR1);
    __atomic_store_n(&round_now, 2, __ATOMIC_RELEASE);
    set_stage(1);
    wait_stage(2);
    for (int i = 0; i < HELPERS; i++)
        pthread_join(helpers[i], NULL);
    pthread_join(first, NULL);
    for (long slot = 1; slot <= 3; slot++)
        run_thread(short_lived, slot);
    stay[0] = start(across_boundary, 4);
    wait_stage(3);
    stay[1] = start(across_boundary, 5);
    wait_stage(4);
    if (end_round() != 0)
        return 3;
    set_stage(5);
    pthread_join(stay[0], NULL);
    pthread_join(stay[1], NULL);
    run_thread(short_lived, 6);
    if (end_round() != 0)
        return 3;
    for (int slot = 0; slot < SLOTS; slot++)
        free_kept(slot);
    if (end_round() != 0)
        return 3;
    print_tallies(1, 4);
    return 0;
}

static int forked(void)
{
    if (end_round() != 0)
        return 3;
    for (int i = 0; i < 8; i++)
        free(malloc(4 << 20));
    pid_t child = fork();
    if (child == 0) {
        __atomic_store_n(&round_now, 1, __ATOMIC_RELEASE);
        memset(tally, 0, sizeof tally);
        if (end_round() != 0) /* the child's first round: its worker starts here */
            _exit(3);
        churn(7, 5);
        free_kept(7);
        if (end_round() != 0)
            _exit(3);
        print_tallies(2, 2);
        exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

static void *(*je_mallocx)(size_t, int);
static void (*je_sdallocx)(void *, size_t, int);

static void *noop(void *arg)
{
    return arg;
}

static void *mallocx_then_exit(void *arg)
{
    (void)arg;
    tally_free(tally_alloc(malloc(64)));
    kept[0][0] = je_mallocx(7000, 0);
    tally_unseen(&tally[2].malloc_bytes, kept[0][0]);
    return NULL;
}

static int extended(void)
{
    je_mallocx = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
    je_sdallocx = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
    if (!je_mallocx || !je_sdallocx)
        return 2;
    run_thread(noop, 0); /* leaves a stack for the thread of round 2 */
    if (end_round() != 0)
        return 3;
    void *p = je_mallocx(5000, 0);
    tally_unseen(&tally[2].malloc_bytes, p);
    tally_free(tally_alloc(malloc(10)));
    tally_free(p);
    void *q = tally_alloc(malloc(3000));
    tally_unseen(&tally[2].free_bytes, q);
    je_sdallocx(q, 3000, 0);
    tally_free(tally_alloc(malloc(20)));
    run_thread(mallocx_then_exit, 0);
    if (end_round() != 0)
        return 3;
    tally_free(kept[0][0]);
    if (end_round() != 0)
        return 3;
    print_tallies(2, 3);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "fork") == 0)
        return forked();
    if (argc > 1 && strcmp(argv[1], "extended") == 0)
        return extended();
    return threads();
}
