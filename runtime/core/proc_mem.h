/* The process's memory as Linux reports it: RSS, its high-water mark, the cgroup's use and limit.
 */
#ifndef ROUNDTRIM_RUNTIME_CORE_PROC_MEM_H
#define ROUNDTRIM_RUNTIME_CORE_PROC_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/forecast.h"

#include "policy/procfs.h"

/* Reads a small regular file into buf (NUL-terminated) with plain syscalls, never following a
 * final symlink nor blocking; false on any failure or for any other kind of file. */
bool roundtrim_read_file(const char *path, char *buf, size_t cap);

uint64_t roundtrim_rss_bytes(void);

/* The resident high-water mark since the last reset (VmHWM). */
uint64_t roundtrim_rss_peak_bytes(void);

/* The resident set and its anonymous, file and shared parts (/proc/self/status: the kernel's
 * own counters, cheap whatever the size). False when unreadable. */
bool roundtrim_status_mem_read(struct roundtrim_status_mem *out);

/* Starts a new high-water mark at the current RSS (/proc/self/clear_refs). False when the kernel
 * refused; the peak then covers the whole life of the process. */
bool roundtrim_rss_peak_reset(void);

struct roundtrim_mem_limit {
    uint64_t used, limit; /* bytes; limit 0 when unknown */
    bool from_cgroup;     /* else RSS against MemTotal */
    bool cgroup_usage_known;
    uint64_t cgroup_usage, cgroup_limit;
    /* What the process can still grow by (policy/forecast.h), and against which limit. */
    uint64_t headroom;
    enum roundtrim_headroom_of headroom_of;
};

/* ROUNDTRIM_CGROUP_DIR as it is used: the directory named, when it holds a memory controller's
 * files; else NULL (the process's own cgroup, found in /proc/self/cgroup), said once in a warning
 * line. Looked at once, on the first call. */
const char *roundtrim_cgroup_dir_in_use(const char *named);

/* The limit that applies to this process: the cgroup's when set, else MemTotal, and the
 * headroom left under it and under the machine's available memory. cgroup_dir may be NULL
 * (discover it from /proc/self/cgroup). Cheap: a few small file reads. */
void roundtrim_mem_limit_read(const char *cgroup_dir, struct roundtrim_mem_limit *out);

#endif
