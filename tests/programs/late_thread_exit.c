/* Threads whose first allocation happens in the last round of their thread-exit destructors,
 * when no new exit hook can run any more; then new threads reuse their stacks. roundtrim's
 * counters must survive that: rounds keep being recorded and nothing hangs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "round_sync.h"

static pthread_key_t key;
static void *spare[512];
static int spare_next;

static void destructor(void *value)
{
    long pass = (long)value;
    if (pass < 4) { /* glibc runs destructors up to 4 times while values keep being set */
        pthread_setspecific(key, (void *)(pass + 1));
        return;
    }
    free(spare[__atomic_fetch_add(&spare_next, 1, __ATOMIC_RELAXED)]);
}

static void *set_key(void *arg)
{
    (void)arg;
    pthread_setspecific(key, (void *)1L);
    return NULL;
}

static void *allocate(void *arg)
{
    (void)arg;
    free(malloc(16));
    return NULL;
}

static void run(void *(*fn)(void *))
{
    pthread_t t;
    pthread_create(&t, NULL, fn, NULL);
    pthread_join(t, NULL);
}

int main(void)
{
    pthread_key_create(&key, destructor);
    for (int i = 0; i < 512; i++)
        spare[i] = malloc(32);
    for (int i = 0; i < 200; i++)
        run(set_key);
    if (end_round_and_wait(0) != 0)
        return 3;
    for (int i = 0; i < 50; i++)
        run(allocate);
    if (end_round_and_wait(1) != 0)
        return 3;
    puts("survived");
    return 0;
}
