/* truth: none
 * Four threads each build 12 MiB of 1-3 KiB blocks a round in their own arenas and free all but
 * one in 16, which live until the next round: the freed heap between them stays resident in
 * glibc's non-main arenas until roundtrim's trim gives it back each round. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

enum { THREADS = 4, N = 6144, KEEP = 16 };
static void *survivors[THREADS][N / KEEP];
static int round_no;

static void *work(void *arg)
{
    int t = (int)(long)arg;
    static __thread void *blocks[N];
    for (int i = 0; i < N; i++) {
        size_t n = 1024 + (size_t)((i * 53 + round_no * 7 + t) % 2048);
        blocks[i] = malloc(n);
        memset(blocks[i], 3, n);
    }
    for (int i = 0; i < N / KEEP; i++)
        free(survivors[t][i]);
    for (int i = 0; i < N; i++) {
        if (i % KEEP == 0)
            survivors[t][i / KEEP] = blocks[i];
        else
            free(blocks[i]);
    }
    return NULL;
}

int main(void)
{
    for (round_no = 0; round_no < 24; round_no++) {
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++)
            pthread_create(&th[t], NULL, work, (void *)t);
        for (int t = 0; t < THREADS; t++)
            pthread_join(th[t], NULL);
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
