/* Peaks early, then shrinks and goes on with small rounds: touches 64 MiB, frees it, then ends a
 * few rounds with SIGUSR1. Prints its own view of its peak at exit, as getrusage gives it, and
 * the high-water mark it reached (RSS right after touching the big buffer), in KiB. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "proc_rss.h"

#include "launcher_signal.h"

int main(void)
{
    size_t big = (size_t)64 << 20;
    char *p = malloc(big);
    if (!p)
        return 2;
    memset(p, 1, big);
    long reached_kb = (long)(rss_bytes() / 1024);
    free(p); /* above the mmap threshold: back to the OS at once */
    struct timespec pause = {0, 150 * 1000 * 1000};
    for (int r = 0; r < 4; r++) {
        void *small = malloc(4096);
        memset(small, 2, 4096);
        free(small);
        signal_from_launcher(SIGUSR1);
        nanosleep(&pause, NULL);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"reached_kb\":%ld,\"maxrss_kb\":%ld}\n", reached_kb, ru.ru_maxrss);
    return 0;
}
