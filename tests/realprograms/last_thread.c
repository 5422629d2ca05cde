/* The main thread ends with pthread_exit while a second thread still works: the process ends when
 * that thread returns (exit status 0), after it printed its result. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *worker(void *arg)
{
    long n = (long)arg, sum = 0;
    struct timespec pause = {0, 2 * 1000 * 1000};
    for (long i = 0; i < n; i++) {
        char *p = malloc(64 + (size_t)(i % 4096));
        memset(p, (int)(i & 0x7f), 64);
        sum += p[i % 64];
        free(p);
        if (i % 2000 == 0)
            nanosleep(&pause, NULL);
    }
    printf("worker done: %ld\n", sum);
    fflush(stdout);
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)200000L) != 0)
        return 1;
    printf("main leaves\n");
    fflush(stdout);
    pthread_exit(NULL);
}
