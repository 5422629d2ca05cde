#include "runtime/metrics_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "policy/prom_format.h"
#include "runtime/log_writer.h"
#include "runtime/proc_mem.h"
#include "runtime/state.h"
#include "runtime/thread_counters.h"

static bool failed; /* warned once; no further attempts */
static uint64_t released_total, cuda_alloc_total, cuda_free_total;

static void process_name(char *buf, size_t cap)
{
    if (!roundtrim_read_file("/proc/self/comm", buf, cap))
        snprintf(buf, cap, "unknown");
    buf[strcspn(buf, "\n")] = '\0';
}

static void warn_failed(const char *path, const char *what)
{
    failed = true;
    char line[4400];
    snprintf(line, sizeof line, "cannot %s ROUNDTRIM_PROM_FILE=%s: %s; going on without metrics",
             what, path, strerror(errno));
    roundtrim_warn(line);
}

void roundtrim_metrics_file_update(const struct roundtrim_round_record *r, uint64_t rounds,
                                   uint64_t cleanups)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (r->rss_before > r->rss_after && r->actions)
        released_total += r->rss_before - r->rss_after;
    cuda_alloc_total += r->cuda.alloc_bytes;
    cuda_free_total += r->cuda.free_bytes;
    if (!cfg->prom_file || failed)
        return;
    char path[4096], tmp[4200], proc[64], text[8192];
    if (!roundtrim_expand_path(cfg->prom_file, (int)getpid(), path, sizeof path))
        return;
    struct roundtrim_traffic total;
    roundtrim_counters_total(&total);
    process_name(proc, sizeof proc);
    struct roundtrim_prom_input in = {
        .pid = (int)getpid(),
        .role = roundtrim_role_name(cfg->role),
        .process = proc,
        .last = r,
        .total = &total,
        .rounds = rounds,
        .cleanups = cleanups,
        .released_bytes_total = released_total,
        .cuda_alloc_bytes_total = cuda_alloc_total,
        .cuda_free_bytes_total = cuda_free_total,
    };
    size_t n = roundtrim_prom_format(&in, text, sizeof text);
    if (n == 0)
        return;
    /* A dot-file in the same directory: the textfile collector ignores it, and rename(2) within
     * one file system replaces the old file in one step. */
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    snprintf(tmp, sizeof tmp, "%.*s.%s.tmp", dirlen, path, slash ? slash + 1 : path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        warn_failed(path, "write");
        return;
    }
    bool ok = roundtrim_write_all(fd, text, n);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        warn_failed(path, "replace");
    }
}

void roundtrim_metrics_file_fork_child(void)
{
    released_total = cuda_alloc_total = cuda_free_total = 0;
}
