/* Operations the kernel allows only to a process with one thread:
 *
 *   namespace_ops unshare|setns
 *
 * unshare: after a round (so that the log is open), unshare(CLONE_NEWUSER), then another round.
 * setns: a forked helper makes a user namespace of its own and waits; the program joins it with
 * setns(CLONE_NEWUSER), then another round. Prints "<op> ok", or "<op> failed: <error>", and
 * "rounds N" (rounds recorded, when roundtrim is preloaded with a log). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "round_sync.h"

static int join_helper_namespace(void)
{
    int ready[2], done[2];
    if (pipe(ready) != 0 || pipe(done) != 0)
        return -1;
    pid_t helper = fork();
    if (helper == 0) {
        char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
        write(ready[1], &c, 1);
        read(done[0], &c, 1);
        _exit(0);
    }
    char c = 'n';
    read(ready[0], &c, 1);
    int rc = -1, err = EINVAL;
    if (c == 'y') {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int)helper);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        rc = fd >= 0 ? setns(fd, CLONE_NEWUSER) : -1;
        err = errno;
        if (fd >= 0)
            close(fd);
    }
    write(done[1], "x", 1);
    waitpid(helper, NULL, 0);
    errno = err;
    return rc;
}

int main(int argc, char **argv)
{
    const char *op = argc > 1 ? argv[1] : "unshare";
    int rounds = end_round_and_wait(0) == 0;
    int rc = strcmp(op, "setns") == 0 ? join_helper_namespace() : unshare(CLONE_NEWUSER);
    if (rc == 0)
        printf("%s ok\n", op);
    else
        printf("%s failed: %s\n", op, strerror(errno));
    rounds += end_round_and_wait(rounds) == 0;
    printf("rounds %d\n", rounds);
    return 0;
}
