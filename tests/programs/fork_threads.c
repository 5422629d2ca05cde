/* Several threads fork at once while rounds end: fork_threads THREADS FORKS ROUND_US. THREADS
 * threads each fork FORKS times (the child exits at once; the thread waits for it) while another
 * thread ends a round every ROUND_US microseconds (0: no rounds) through roundtrim_round_end
 * when roundtrim is there. Native servers, pre-fork workers and crash reporters fork from several
 * threads. Prints {"forks", "longest_fork_us", "rounds_ended"}; exits 0 once every child is
 * reaped and the rounds thread has stopped. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int forks_each, round_us;
static volatile bool done;
static uint64_t longest_us, rounds_ended;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static void *rounds(void *arg)
{
    (void)arg;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    while (!done) {
        free(malloc(4096));
        if (round_end)
            round_end();
        rounds_ended++;
        usleep((useconds_t)round_us);
    }
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    for (int i = 0; i < forks_each; i++) {
        free(malloc(100 + (size_t)i));
        uint64_t t0 = now_us();
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        uint64_t took = now_us() - t0;
        if (pid > 0)
            waitpid(pid, NULL, 0);
        pthread_mutex_lock(&lock);
        if (took > longest_us)
            longest_us = took;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int threads = atoi(argv[1]);
    forks_each = atoi(argv[2]);
    round_us = atoi(argv[3]);
    pthread_t r, t[64];
    if (threads < 1 || threads > 64)
        return 2;
    if (round_us > 0)
        pthread_create(&r, NULL, rounds, NULL);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, forker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    done = true;
    if (round_us > 0)
        pthread_join(r, NULL);
    printf("{\"forks\":%d,\"longest_fork_us\":%llu,\"rounds_ended\":%llu}\n", threads * forks_each,
           (unsigned long long)longest_us, (unsigned long long)rounds_ended);
    return 0;
}
