/* A program that closes every descriptor above 2 (as daemons and closefrom(3) do) and opens 300
 * files of its own, reusing every low number, roundtrim's log descriptor included, then ends two
 * more rounds. Prints how many of its files hold anything but what it wrote.
 *   fd_reuse DIR */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "round_sync.h"

#define FILES 300

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (end_round_and_wait(0) != 0)
        return 3;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    static int fds[FILES];
    static const char data[] = "the program's own data\n";
    for (int i = 0; i < FILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data%03d", argv[1], i);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fds[i] < 0 || write(fds[i], data, sizeof data - 1) != (ssize_t)(sizeof data - 1))
            return 4;
    }
    if (end_round_and_wait(1) != 0 || end_round_and_wait(2) != 0)
        return 5;
    int foreign = 0;
    for (int i = 0; i < FILES; i++) {
        char buf[256];
        ssize_t n = pread(fds[i], buf, sizeof buf, 0);
        if (n < 0) {
            /* opened write-only: read it back through its path */
            char path[4096];
            snprintf(path, sizeof path, "%s/data%03d", argv[1], i);
            int r = open(path, O_RDONLY);
            n = r >= 0 ? read(r, buf, sizeof buf) : -1;
            if (r >= 0)
                close(r);
        }
        if (n != (ssize_t)(sizeof data - 1) || memcmp(buf, data, sizeof data - 1) != 0)
            foreign++;
    }
    printf("files=%d lowest=%d highest=%d foreign=%d\n", FILES, fds[0], fds[FILES - 1], foreign);
    return 0;
}
