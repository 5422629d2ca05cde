/* Peaks early, then shrinks and goes on with small rounds: touches 64 MiB, frees it, then ends a
 * few rounds with SIGUSR1. Prints its own view of its peak at exit, as getrusage gives it, and
 * the high-water mark it reached (RSS right after touching the big buffer), in KiB.
 *
 * The work runs in a fork child: a process's ru_maxrss starts from its launcher's when the
 * launcher spawned it with vfork (the kernel keeps the larger of the marks across exec), and a
 * test runner can be larger than the peak measured here. A forked child's starts from its own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_rss.h"

#include "launcher_signal.h"

static int peak_then_rounds(void)
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

int main(void)
{
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 2;
    if (child == 0)
        _exit(peak_then_rounds() == 0 && fflush(stdout) == 0 ? 0 : 2);
    int status;
    while (waitpid(child, &status, 0) < 0)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}
