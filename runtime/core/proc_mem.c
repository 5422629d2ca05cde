#include "runtime/core/proc_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "runtime/core/fd_guard.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/settings.h"

bool roundtrim_read_file(const char *path, char *buf, size_t cap)
{
    /* cgroup paths come from the environment: a FIFO or a device there must not block or act. */
    int fd = roundtrim_open_read(path);
    if (fd < 0)
        return false;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    roundtrim_fd_guard_close(fd);
    buf[len] = '\0';
    return len > 0;
}

/* The process's own file `name`, read through the calling thread: once the main thread has ended
 * (pthread_exit), /proc/self is its zombie, with no memory to report, while the process lives on
 * in its other threads. /proc/self where thread-self is missing (Linux before 3.17). */
static bool read_self_file(const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/thread-self/%s", name);
    if (roundtrim_read_file(path, buf, cap))
        return true;
    snprintf(path, sizeof path, "/proc/self/%s", name);
    return roundtrim_read_file(path, buf, cap);
}

uint64_t roundtrim_rss_bytes(void)
{
    char buf[256];
    uint64_t rss = 0;
    if (read_self_file("statm", buf, sizeof buf))
        roundtrim_parse_statm_resident(buf, (uint64_t)sysconf(_SC_PAGESIZE), &rss);
    return rss;
}

uint64_t roundtrim_rss_peak_bytes(void)
{
    char buf[4096];
    uint64_t hwm = 0;
    if (read_self_file("status", buf, sizeof buf))
        roundtrim_parse_kb_field(buf, "VmHWM", &hwm);
    return hwm;
}

bool roundtrim_status_mem_read(struct roundtrim_status_mem *out)
{
    char buf[4096];
    *out = (struct roundtrim_status_mem){0};
    if (!read_self_file("status", buf, sizeof buf))
        return false;
    roundtrim_parse_status_mem(buf, out);
    return out->have_rss;
}

bool roundtrim_rss_peak_reset(void)
{
    roundtrim_fd_guard_enter();
    int fd = open("/proc/thread-self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        roundtrim_fd_guard_leave();
        return false;
    }
    roundtrim_fd_guard_note(fd);
    /* "5" resets the peak RSS only; it leaves the page referenced/dirty bits alone. */
    bool ok = write(fd, "5", 1) == 1;
    roundtrim_fd_guard_close(fd);
    return ok;
}

static bool read_number_file(const char *dir, const char *name, bool limit, uint64_t *v)
{
    char path[1200], buf[64];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        !roundtrim_read_file(path, buf, sizeof buf))
        return false;
    return limit ? roundtrim_parse_cgroup_limit(buf, v) : roundtrim_parse_cgroup_usage(buf, v);
}

/* The cgroup's inactive page cache (v2 inactive_file, v1 total_inactive_file): 0 when unread,
 * which only makes the headroom smaller. */
static uint64_t inactive_file(const char *dir)
{
    char path[1200], buf[8192];
    uint64_t v = 0;
    if (snprintf(path, sizeof path, "%s/memory.stat", dir) < (int)sizeof path &&
        roundtrim_read_file(path, buf, sizeof buf) &&
        !roundtrim_parse_stat_field(buf, "inactive_file", &v))
        roundtrim_parse_stat_field(buf, "total_inactive_file", &v);
    return v;
}

const char *roundtrim_cgroup_dir_in_use(const char *named)
{
    static int state; /* 0: not looked at yet, 1: usable, 2: not */
    if (!named)
        return NULL;
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (!s) {
        uint64_t v;
        bool usable = read_number_file(named, "memory.current", false, &v) ||
                      read_number_file(named, "memory.usage_in_bytes", false, &v) ||
                      read_number_file(named, "memory.max", true, &v) ||
                      read_number_file(named, "memory.limit_in_bytes", true, &v);
        int expected = 0;
        s = usable ? 1 : 2;
        if (__atomic_compare_exchange_n(&state, &expected, s, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            if (!usable) {
                char shown[84], text[320];
                size_t n = 0;
                for (; named[n] && n < 80; n++) /* the start of it, printable */
                    shown[n] = named[n] >= 0x20 && named[n] < 0x7f ? named[n] : '?';
                snprintf(shown + n, sizeof shown - n, "%s", named[n] ? "..." : "");
                snprintf(text, sizeof text,
                         "ROUNDTRIM_CGROUP_DIR=%s holds no readable memory.current, memory.max, "
                         "memory.usage_in_bytes or memory.limit_in_bytes; using the default (the "
                         "process's cgroup, from /proc/self/cgroup)",
                         shown);
                roundtrim_warn_setting(text);
            }
        } else {
            s = expected;
        }
    }
    return s == 1 ? named : NULL;
}

void roundtrim_mem_limit_read(const char *cgroup_dir, struct roundtrim_mem_limit *out)
{
    char dir[1100], buf[4096];
    *out = (struct roundtrim_mem_limit){0};
    uint64_t rss = roundtrim_rss_bytes();
    if (!cgroup_dir && roundtrim_read_file("/proc/self/cgroup", buf, sizeof buf) &&
        roundtrim_cgroup_dir_from_proc(buf, dir, sizeof dir))
        cgroup_dir = dir;
    struct roundtrim_headroom_in room = {0};
    if (cgroup_dir) {
        uint64_t limit = 0, usage = 0;
        bool have_limit = read_number_file(cgroup_dir, "memory.max", true, &limit) ||
                          read_number_file(cgroup_dir, "memory.limit_in_bytes", true, &limit);
        bool have_usage = read_number_file(cgroup_dir, "memory.current", false, &usage) ||
                          read_number_file(cgroup_dir, "memory.usage_in_bytes", false, &usage);
        if (have_limit && limit > 0) {
            out->from_cgroup = true;
            out->limit = limit;
            out->cgroup_limit = limit;
            /* The OOM killer follows the cgroup's use (page cache included) when we can see it. */
            out->used = have_usage ? usage : rss;
        }
        if (have_usage) {
            out->cgroup_usage_known = true;
            out->cgroup_usage = usage;
        }
        if (out->from_cgroup && have_usage) {
            room.cgroup_limit = limit;
            room.cgroup_usage_known = true;
            room.cgroup_usage = usage;
            room.cgroup_inactive_file = inactive_file(cgroup_dir);
        }
    }
    uint64_t total = 0;
    if (roundtrim_read_file("/proc/meminfo", buf, sizeof buf)) {
        roundtrim_parse_kb_field(buf, "MemTotal", &total);
        room.available_known = roundtrim_parse_kb_field(buf, "MemAvailable", &room.available);
    }
    out->headroom_of = roundtrim_headroom(&room, &out->headroom);
    if (out->from_cgroup)
        return;
    out->used = rss;
    out->limit = total;
}
