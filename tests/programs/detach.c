/* A daemon that detaches from its starter: it forks, the child points 0, 1 and 2 at /dev/null
 * and lives on (SECONDS, 30 by default), the parent exits. `out=$(detach 2>&1)` returns once
 * the parent is gone. With --at-exit the fork happens in an atexit handler of the parent, after
 * exit() began. Prints the child's pid.   detach [--at-exit] [SECONDS] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int seconds = 30;

static void detach(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid != 0) {
        if (pid > 0)
            printf("%d\n", (int)pid);
        return;
    }
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
    close(null);
    sleep((unsigned)seconds);
    _exit(0);
}

int main(int argc, char **argv)
{
    int at_exit = argc > 1 && strcmp(argv[1], "--at-exit") == 0;
    if (argc > 1 + at_exit)
        seconds = atoi(argv[1 + at_exit]);
    if (at_exit)
        atexit(detach);
    else
        detach();
    return 0;
}
