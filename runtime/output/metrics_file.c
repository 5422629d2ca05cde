#include "runtime/output/metrics_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/framework_hooks.h"
#include "runtime/output/path_template.h"
#include "policy/prom_format.h"
#include "policy/round_record.h"
#include "runtime/core/fd_guard.h"
#include "runtime/core/kernel_calls.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/settings.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/python/round_hook.h"

static uint64_t released_total, cuda_alloc_total, cuda_free_total, cleanup_cpu_total;
static struct roundtrim_skip_counts skips;

static void process_name(char *buf, size_t cap)
{
    if (!roundtrim_read_file("/proc/self/comm", buf, cap))
        snprintf(buf, cap, "unknown");
    buf[strcspn(buf, "\n")] = '\0';
}

/* One warning per process: a path that cannot be written is tried again at the next round (the
 * disk may have room again), silently. */
static void warn_once(const char *path, const char *what, const char *why)
{
    static bool said;
    if (said)
        return;
    said = true;
    char line[4400];
    snprintf(line, sizeof line, "cannot %s ROUNDTRIM_PROM_FILE=%s: %s; metrics are not updated",
             what, path, why);
    roundtrim_warn(line);
}

/* The target may be replaced only when it is a regular file or absent: a device (/dev/null as
 * root), a FIFO, a directory or a symlink at the path is left alone, and so is another user's
 * file in a sticky directory (root may remove it there; nobody else could). */
static bool target_replaceable(const char *path, bool *exists)
{
    struct stat st;
    *exists = roundtrim_lstat(path, &st) == 0;
    if (!*exists && errno != ENOENT) {
        warn_once(path, "inspect", strerror(errno));
        return false;
    }
    if (!*exists)
        return true;
    const char *foreign = S_ISREG(st.st_mode) ? roundtrim_file_foreign(path, &st) : NULL;
    if (S_ISREG(st.st_mode) && !foreign)
        return true;
    char why[128];
    if (foreign)
        snprintf(why, sizeof why, "it %s, left alone", foreign);
    else
        snprintf(why, sizeof why, "it is %s, left alone", roundtrim_file_kind(st.st_mode));
    warn_once(path, "replace", why);
    return false;
}

/* Writes text to a new temporary file beside path and renames it over path. The temporary name
 * is unpredictable and created exclusively, so processes sharing the path never collide and a
 * planted file or symlink is never written through; the last rename wins. */
static void replace_file(const char *path, const char *text, size_t n)
{
    bool exists;
    if (!target_replaceable(path, &exists))
        return;
    char tmp[4400];
    int fd = roundtrim_create_beside(path, tmp, sizeof tmp);
    if (fd < 0) {
        warn_once(path, "write", strerror(errno));
        return;
    }
    const char *bufs[1] = {text};
    bool ok = roundtrim_write_quiet(fd, bufs, &n, 1) == n;
    int err = errno;
    ok = roundtrim_fd_guard_close(fd) == 0 && ok;
    if (!ok) {
        unlink(tmp);
        warn_once(path, "write", strerror(err ? err : errno));
        return;
    }
    /* A first file never replaces something created at the path meanwhile. */
    int rc = 0;
    if (!exists) {
        rc = roundtrim_rename_noreplace(tmp, path);
        if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) /* file system without it */
            rc = rename(tmp, path);
        exists = rc != 0 && errno == EEXIST;
    }
    bool left_alone = false;
    if (exists) {
        left_alone = !target_replaceable(path, &exists);
        rc = left_alone ? -1 : rename(tmp, path);
    }
    if (rc != 0) {
        err = errno;
        unlink(tmp);
        if (!left_alone)
            warn_once(path, "replace", strerror(err));
    }
}

void roundtrim_metrics_file_update(const struct roundtrim_round_record *r, uint64_t rounds,
                                   uint64_t cleanups, const struct roundtrim_diagnosis *diagnosis)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (r->rss_before > r->rss_after && r->actions)
        released_total += r->rss_before - r->rss_after;
    cleanup_cpu_total += r->cleanup_cpu_us;
    cuda_alloc_total += r->cuda.alloc_bytes;
    cuda_free_total += r->cuda.free_bytes;
    roundtrim_skip_counts_add(&skips, r);
    if (!cfg->prom_file)
        return;
    /* Callers are serialised (the round lock): the text need not take an exiting thread's
     * stack. */
    static char text[16384];
    char path[4096], proc[64], host[72];
    if (!roundtrim_output_path(cfg->prom_file, path, sizeof path))
        return;
    struct roundtrim_traffic total;
    roundtrim_counters_total(&total);
    process_name(proc, sizeof proc);
    roundtrim_output_host(host, sizeof host);
    struct roundtrim_prom_input in = {
        .pid = (int)getpid(),
        .role = roundtrim_role_name(cfg->role),
        .process = proc,
        .hostname = host,
        .last = r,
        .total = &total,
        .rounds = rounds,
        .cleanups = cleanups,
        .released_bytes_total = released_total,
        .cleanup_cpu_us_total = cleanup_cpu_total,
        .cuda_alloc_bytes_total = cuda_alloc_total,
        .cuda_free_bytes_total = cuda_free_total,
        .diagnosis = diagnosis,
        .framework = roundtrim_fw_label(roundtrim_py_hooks_framework()),
        .skips = &skips,
    };
    size_t n = roundtrim_prom_format(&in, text, sizeof text);
    if (n == 0)
        return;
    replace_file(path, text, n);
}

void roundtrim_metrics_file_fork_child(void)
{
    released_total = cuda_alloc_total = cuda_free_total = cleanup_cpu_total = 0;
    skips = (struct roundtrim_skip_counts){0};
}
