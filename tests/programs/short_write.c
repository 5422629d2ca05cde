/* A round record cut short by a full disk, simulated with the file size limit: round 1 is
 * written whole; the limit then lets only part of round 2 through; with the limit lifted,
 * round 3 and the exit record follow. SIGXFSZ keeps its default action (it ends the process):
 * roundtrim's own writes must not raise it. Prints the log size at each step. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "round_sync.h"

static long log_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int main(void)
{
    const char *path = getenv("ROUNDTRIM_LOG");
    if (!path || end_round_and_wait(0) != 0)
        return 3;
    long whole = log_size(path);
    struct rlimit lim;
    getrlimit(RLIMIT_FSIZE, &lim);
    struct rlimit small = lim;
    small.rlim_cur = (rlim_t)whole + 40; /* room for the start of the next record only */
    if (setrlimit(RLIMIT_FSIZE, &small) != 0)
        return 4;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    round_end();
    for (int i = 0; i < 1000 && log_size(path) == whole; i++) {
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    long cut = log_size(path);
    /* the worker gives up on the record after the partial write: let it finish that first */
    struct timespec t = {0, 200 * 1000 * 1000};
    nanosleep(&t, NULL);
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 5;
    if (end_round_and_wait(log_round_count(path, getpid())) != 0)
        return 6;
    printf("whole=%ld cut=%ld after=%ld\n", whole, cut, log_size(path));
    return 0;
}
