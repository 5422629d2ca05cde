/* A round record cut short by a full disk, simulated with the file size limit: round 1 is
 * written whole; the limit then lets only part of round 2 through; with the limit lifted,
 * round 3 and the exit record follow. SIGXFSZ keeps its default action (it ends the process):
 * roundtrim's own writes must not raise it. roundtrim's warning about the cut record (on stderr,
 * caught in a file meanwhile) tells when it gave up on round 2. Prints the log size at each step.
 */
#include <fcntl.h>
#include <stdbool.h>
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

static bool file_holds(const char *path, const char *text)
{
    char buf[4096];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, text) != NULL;
}

int main(void)
{
    const char *path = getenv("ROUNDTRIM_LOG");
    if (!path || end_round_and_wait(0) != 0)
        return 3;
    long whole = log_size(path);
    char caught[4200];
    snprintf(caught, sizeof caught, "%s.stderr", path);
    int saved_stderr = dup(2), catcher = open(caught, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (saved_stderr < 0 || catcher < 0 || dup2(catcher, 2) != 2)
        return 4;

    struct rlimit lim;
    getrlimit(RLIMIT_FSIZE, &lim);
    struct rlimit small = lim;
    small.rlim_cur = (rlim_t)whole + 40; /* room for the start of the next record only */
    if (setrlimit(RLIMIT_FSIZE, &small) != 0)
        return 5;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    round_end();
    for (int i = 0; i < 1000 && !file_holds(caught, "records are lost"); i++) {
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    long cut = log_size(path);
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 6;

    /* stderr back, with what roundtrim said meanwhile */
    char said[4096];
    ssize_t n = pread(catcher, said, sizeof said, 0);
    dup2(saved_stderr, 2);
    if (n > 0 && write(2, said, (size_t)n) != n)
        return 7;
    unlink(caught);
    if (end_round_and_wait(log_round_count(path, getpid())) != 0)
        return 8;
    printf("whole=%ld cut=%ld after=%ld\n", whole, cut, log_size(path));
    return 0;
}
