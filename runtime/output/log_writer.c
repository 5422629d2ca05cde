#include "runtime/output/log_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/output/path_template.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/stderr_hold.h"
#include "runtime/core/settings.h"

enum { LOG_UNOPENED, LOG_OPEN, LOG_NONE };
static int log_state = LOG_UNOPENED;
static int log_fd = -1;
static struct roundtrim_file_id log_id;
static bool log_is_stderr;
static char log_path[4096];
/* The last write stopped inside a line (a full disk, a file size limit): the next record starts
 * with a newline, so that it is a line of its own. */
static bool line_open;
/* The worker, the Python helper and the exiting thread may all write records. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static roundtrim_record_format_fn first_record;

void roundtrim_log_set_first_record(roundtrim_record_format_fn format)
{
    first_record = format;
}

static void warn_unusable(const char *why)
{
    char line[4400];
    snprintf(line, sizeof line, "cannot open ROUNDTRIM_LOG=%s: %s; going on without a round log",
             log_path, why);
    roundtrim_warn(line);
}

static bool open_log(void)
{
    const char *tmpl = roundtrim_config()->log_path;
    if (!tmpl)
        return false;
    if (strcmp(tmpl, "stderr") == 0) {
        log_fd = roundtrim_stderr_fd();
        log_is_stderr = true;
        return roundtrim_fd_id(log_fd, &log_id);
    }
    if (!roundtrim_output_path(tmpl, log_path, sizeof log_path)) {
        roundtrim_warn("ROUNDTRIM_LOG is too long a path; going on without a round log");
        return false;
    }
    const char *why = NULL;
    log_fd = roundtrim_open_append(log_path, &log_id, &why);
    if (log_fd < 0) {
        warn_unusable(why);
        return false;
    }
    return true;
}

/* Our descriptor is gone or its number now holds a file of the program's: open the path again
 * (never touching that number), or give up the log. For ROUNDTRIM_LOG=stderr, the file the
 * program's stderr held at the first record is the log. */
static bool still_ours(void)
{
    if (roundtrim_fd_is(log_fd, &log_id))
        return true;
    if (log_is_stderr) {
        /* Exit has begun and the program closed its stderr: the copy taken then is the same
         * file. Otherwise the program pointed its stderr elsewhere (closed it, reused the
         * number): records are not written into what it holds now, and there is nowhere left
         * to say so. */
        int held = roundtrim_stderr_fd();
        if (held != log_fd && roundtrim_fd_is(held, &log_id)) {
            log_fd = held;
            return true;
        }
        log_state = LOG_NONE;
        return false;
    }
    const char *why = NULL;
    log_fd = roundtrim_open_append(log_path, &log_id, &why);
    if (log_fd >= 0)
        return true;
    warn_unusable(why);
    log_state = LOG_NONE;
    return false;
}

static bool write_record(const char *line, size_t len)
{
    const char *bufs[2] = {"\n", line};
    size_t lens[2] = {1, len};
    size_t prefix = line_open ? 1 : 0;
    size_t done =
        roundtrim_write_quiet(log_fd, bufs + 1 - prefix, lens + 1 - prefix, (int)(1 + prefix));
    if (done == len + prefix) {
        line_open = false;
        return true;
    }
    /* Whatever part of the record got out is a broken line; a lone newline closed the old one. */
    if (done > prefix)
        line_open = true;
    else if (done == prefix)
        line_open = false;
    return false;
}

static void warn_write_failed(int err)
{
    static bool said;
    if (said)
        return;
    said = true;
    char msg[300];
    snprintf(msg, sizeof msg, "writing the round log failed: %s; records are lost", strerror(err));
    roundtrim_warn(msg);
}

/* The check that the descriptor is ours and the write are two calls: a program that closes
 * descriptors in a loop may close ours between them. The write then fails with EBADF having
 * written nothing, and the record goes to the path opened again. */
static bool write_checked(const char *line, size_t len)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        if (!still_ours())
            return false;
        if (write_record(line, len))
            return true;
        if (errno != EBADF)
            break;
    }
    warn_write_failed(errno);
    return false;
}

static bool ensure_open(void)
{
    if (log_state == LOG_UNOPENED) {
        log_state = open_log() ? LOG_OPEN : LOG_NONE;
        if (log_state == LOG_OPEN && first_record) {
            char start[8192];
            size_t n = first_record(start, sizeof start);
            if (n > 0)
                write_checked(start, n);
        }
    }
    return log_state == LOG_OPEN;
}

bool roundtrim_log_write(const char *line, size_t len)
{
    pthread_mutex_lock(&log_lock);
    bool ok = ensure_open() && write_checked(line, len);
    pthread_mutex_unlock(&log_lock);
    return ok;
}

void roundtrim_log_record_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                double ts)
{
    roundtrim_json_event_begin(j, buf, cap, event, (int)getpid(), ts);
}

void roundtrim_log_record_write(struct roundtrim_json *j)
{
    size_t len = roundtrim_json_end(j);
    if (len > 0)
        roundtrim_log_write(j->text.buf, len);
}

bool roundtrim_log_open(void)
{
    pthread_mutex_lock(&log_lock);
    bool ok = ensure_open();
    pthread_mutex_unlock(&log_lock);
    return ok;
}

bool roundtrim_log_started(void)
{
    return __atomic_load_n(&log_state, __ATOMIC_RELAXED) == LOG_OPEN;
}

void roundtrim_log_fork_child(void)
{
    pthread_mutex_init(&log_lock, NULL);
    /* The child writes its own start record, to its own file when the path has %p. The number is
     * closed only while it still holds our file: it may be the program's by now. */
    if (log_state == LOG_OPEN && !log_is_stderr && roundtrim_fd_is(log_fd, &log_id))
        close(log_fd);
    log_state = LOG_UNOPENED;
    log_fd = -1;
    log_is_stderr = false;
    line_open = false;
}
