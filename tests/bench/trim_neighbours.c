/* What a trim costs with the process's other threads running beside it, against the same trim
 * with them asleep: the main thread builds a fragmented heap (blocks of 64-4,064 bytes, one in
 * 16 kept), then times malloc_trim(0) while N threads of the same process spin on a CPU (or
 * sleep), alternately, REPS times each.
 *
 *   trim_neighbours [--mib M] [--spinners N] [--reps R]
 *
 * madvise(MADV_DONTNEED) must flush the TLB of every CPU that runs a thread of the process, so
 * each call interrupts the CPUs its running threads are on; threads of other processes cost
 * only CPU time. One JSON line per trim: wall and CPU time, and the trimming thread's
 * involuntary context switches. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile int spin, stop;

static double ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *neighbour(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!stop) {
        if (spin)
            x++;
        else
            usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int mib = 256, spinners = 1, reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mib") == 0)
            mib = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--spinners") == 0)
            spinners = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: trim_neighbours [--mib M] [--spinners N] [--reps R]\n");
            return 2;
        }
    }
    size_t n = (size_t)mib * 1024 * 1024 / 2064;
    void **p = malloc(n * sizeof *p);
    pthread_t *t = calloc((size_t)spinners, sizeof *t);
    for (int s = 0; s < spinners; s++)
        pthread_create(&t[s], NULL, neighbour, NULL);
    uint64_t seed = 88172645463325252ull;
    for (int r = 0; r < 2 * reps; r++) {
        for (size_t i = 0; i < n; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            size_t size = 64 + (size_t)(seed % 4001);
            p[i] = malloc(size);
            memset(p[i], 1, size);
        }
        for (size_t i = 0; i < n; i++)
            if (i % 16)
                free(p[i]);
        spin = r % 2;
        usleep(20000);
        struct rusage u0, u1;
        getrusage(RUSAGE_THREAD, &u0);
        double w0 = ms(CLOCK_MONOTONIC), c0 = ms(CLOCK_THREAD_CPUTIME_ID);
        malloc_trim(0);
        double w = ms(CLOCK_MONOTONIC) - w0, c = ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        getrusage(RUSAGE_THREAD, &u1);
        spin = 0;
        printf("{\"neighbours\":\"%s\",\"spinners\":%d,\"mib\":%d,\"wall_ms\":%.1f,"
               "\"cpu_ms\":%.1f,\"involuntary_switches\":%ld}\n",
               r % 2 ? "running" : "asleep", spinners, mib, w, c, u1.ru_nivcsw - u0.ru_nivcsw);
        fflush(stdout);
        for (size_t i = 0; i < n; i += 16)
            free(p[i]);
    }
    stop = 1;
    for (int s = 0; s < spinners; s++)
        pthread_join(t[s], NULL);
    return 0;
}
