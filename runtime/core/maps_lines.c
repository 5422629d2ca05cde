#include "runtime/core/maps_lines.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "runtime/core/fd_guard.h"
#include "runtime/core/safe_file.h"

bool roundtrim_maps_lines(void (*each)(void *ctx, const char *line), void *ctx)
{
    int fd = roundtrim_open_read("/proc/thread-self/maps");
    if (fd < 0)
        fd = roundtrim_open_read("/proc/self/maps");
    return fd >= 0 && roundtrim_fd_records(fd, '\n', each, ctx);
}

bool roundtrim_file_records(const char *path, char end, void (*each)(void *ctx, const char *rec),
                            void *ctx)
{
    int fd = roundtrim_open_read(path);
    return fd >= 0 && roundtrim_fd_records(fd, end, each, ctx);
}

bool roundtrim_fd_records(int fd, char end, void (*each)(void *ctx, const char *rec), void *ctx)
{
    char buf[4096];
    size_t have = 0;
    bool ok = true;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            ok = false;
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = memchr(line, end, have - (size_t)(line - buf)))) {
            *nl = '\0';
            each(ctx, line);
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) /* a line longer than the buffer: a path; dropped */
            have = 0;
    }
    roundtrim_fd_guard_close(fd);
    if (have > 0) {
        buf[have] = '\0';
        each(ctx, buf);
    }
    return ok;
}
