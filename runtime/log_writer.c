#include "runtime/log_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "runtime/start_record.h"
#include "runtime/state.h"

enum { LOG_UNOPENED, LOG_OPEN, LOG_NONE };
static int log_state = LOG_UNOPENED;
static int log_fd = -1;

#define HIGH_FD 200

bool roundtrim_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool open_log(void)
{
    const char *tmpl = roundtrim_config()->log_path;
    if (!tmpl)
        return false;
    if (strcmp(tmpl, "stderr") == 0) {
        log_fd = STDERR_FILENO;
        return true;
    }
    char path[4096];
    if (!roundtrim_expand_path(tmpl, (int)getpid(), path, sizeof path)) {
        roundtrim_warn("ROUNDTRIM_LOG is too long a path; going on without a round log");
        return false;
    }
    log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd >= 0 && log_fd < HIGH_FD) {
        /* Out of the way of programs that close and reuse the low descriptors. */
        int high = fcntl(log_fd, F_DUPFD_CLOEXEC, HIGH_FD);
        if (high >= 0) {
            close(log_fd);
            log_fd = high;
        }
    }
    if (log_fd < 0) {
        char line[4400];
        snprintf(line, sizeof line,
                 "cannot open ROUNDTRIM_LOG=%s: %s; going on without a round log", path,
                 strerror(errno));
        roundtrim_warn(line);
        return false;
    }
    return true;
}

static bool ensure_open(void)
{
    if (log_state == LOG_UNOPENED) {
        log_state = open_log() ? LOG_OPEN : LOG_NONE;
        if (log_state == LOG_OPEN) {
            char start[8192];
            size_t n = roundtrim_start_record_format(start, sizeof start);
            if (n > 0)
                roundtrim_write_all(log_fd, start, n);
        }
    }
    return log_state == LOG_OPEN;
}

bool roundtrim_log_write(const char *line, size_t len)
{
    if (!ensure_open())
        return false;
    if (!roundtrim_write_all(log_fd, line, len)) {
        static bool said;
        if (!said) {
            said = true;
            char msg[300];
            snprintf(msg, sizeof msg, "writing the round log failed: %s; records are lost",
                     strerror(errno));
            roundtrim_warn(msg);
        }
        return false;
    }
    return true;
}

bool roundtrim_log_started(void)
{
    return log_state == LOG_OPEN;
}

void roundtrim_log_fork_child(void)
{
    /* The child writes its own start record, to its own file when the path has %p. */
    if (log_state == LOG_OPEN && log_fd != STDERR_FILENO)
        close(log_fd);
    log_state = LOG_UNOPENED;
    log_fd = -1;
}
