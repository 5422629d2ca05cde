/* A program whose main thread ends with pthread_exit while another thread goes on: without
 * roundtrim the process exits 0 when that last thread ends (glibc calls exit(0)), running the
 * atexit handlers. Usage: main_thread_exit [--round] [--block]
 *   --round  ends a round (roundtrim_round_end, when preloaded) first: the worker is running
 *   --block  the last thread waits for a signal for ever instead of returning */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool block;

static void at_exit(void)
{
    puts("atexit handler ran");
    fflush(stdout);
}

static void *last_thread(void *arg)
{
    (void)arg;
    usleep(200000); /* main's pthread_exit comes first */
    puts("last thread running");
    fflush(stdout);
    if (block)
        for (;;)
            pause();
    char *p = malloc(100); /* counted on a thread of its own */
    free(p);
    puts("last thread returns");
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv)
{
    bool round = false;
    for (int i = 1; i < argc; i++) {
        round |= strcmp(argv[i], "--round") == 0;
        block |= strcmp(argv[i], "--block") == 0;
    }
    atexit(at_exit);
    if (round) {
        void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
        if (round_end)
            round_end();
    }
    pthread_t t;
    if (pthread_create(&t, NULL, last_thread, NULL) != 0)
        return 3;
    puts("main thread ends with pthread_exit");
    fflush(stdout);
    pthread_exit(NULL);
}
