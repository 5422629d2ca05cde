/* ROUNDTRIM_LOG=stderr in a program that, after a first round, closes its stderr and opens a data
 * file of its own, which takes descriptor 2; then it ends two more rounds and exits.
 *   stderr_reuse STDERR_FILE DATA_FILE   (STDERR_FILE: where the caller sent stderr) */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>

#include "round_sync.h"

int main(int argc, char **argv)
{
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    if (argc < 3 || !round_end)
        return 2;
    round_end();
    for (int i = 0; i < 1000 && log_round_count(argv[1], getpid()) == 0; i++) {
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    close(2);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    static const char data[] = "the program's own data\n";
    if (fd != 2 || write(fd, data, sizeof data - 1) != (ssize_t)(sizeof data - 1))
        return 3;
    round_end();
    round_end();
    return 0;
}
