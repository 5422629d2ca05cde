/* Concurrent stress of a structure: producer threads and a consumer, all at once. Built under
 * ThreadSanitizer by `make tsan` (mk/tsan.mk). */
#ifndef ROUNDTRIM_TEST_STRESS_H
#define ROUNDTRIM_TEST_STRESS_H

#include <check.h>
#include <pthread.h>
#include <stdbool.h>

#define STRESS_PRODUCERS_MAX 16

struct stress {
    int producers;
    void (*produce)(int id, void *arg); /* on each producer thread, id 0 .. producers-1 */
    void (*consume)(void *arg);         /* on the calling thread, over and over meanwhile */
    void *arg;
};

struct stress_thread {
    const struct stress *s;
    int id;
    pthread_barrier_t *start;
    int *done;
};

static inline void *stress_producer(void *p)
{
    struct stress_thread *t = p;
    pthread_barrier_wait(t->start);
    t->s->produce(t->id, t->s->arg);
    __atomic_add_fetch(t->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Starts the producers together, consumes until the last is done, joins them. The caller checks
 * the totals afterwards (a last consume included, if it needs one). */
static inline void stress_run(const struct stress *s)
{
    pthread_t th[STRESS_PRODUCERS_MAX];
    struct stress_thread args[STRESS_PRODUCERS_MAX];
    pthread_barrier_t start;
    int done = 0;
    ck_assert_int_le(s->producers, STRESS_PRODUCERS_MAX);
    pthread_barrier_init(&start, NULL, (unsigned)s->producers + 1);
    for (int i = 0; i < s->producers; i++) {
        args[i] = (struct stress_thread){s, i, &start, &done};
        ck_assert_int_eq(pthread_create(&th[i], NULL, stress_producer, &args[i]), 0);
    }
    pthread_barrier_wait(&start);
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < s->producers)
        s->consume(s->arg);
    for (int i = 0; i < s->producers; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
}

#endif
