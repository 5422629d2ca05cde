/* Parsers for the text of /proc and cgroup files, and for path templates. Pure. */
#ifndef ROUNDTRIM_POLICY_PROCFS_H
#define ROUNDTRIM_POLICY_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "Name:   1234 kB" lines, as in /proc/self/status and /proc/meminfo: the value in bytes. */
bool roundtrim_parse_kb_field(const char *text, const char *name, uint64_t *bytes);

/* /proc/self/statm: the second field (resident pages) times the page size. */
bool roundtrim_parse_statm_resident(const char *text, uint64_t page_size, uint64_t *bytes);

/* A cgroup memory limit file (v2 memory.max or v1 memory.limit_in_bytes). *limit is 0 when
 * there is no limit ("max", or v1's near-2^63 "unlimited"). */
bool roundtrim_parse_cgroup_limit(const char *text, uint64_t *limit);

/* A cgroup usage file: a single number of bytes. */
bool roundtrim_parse_cgroup_usage(const char *text, uint64_t *usage);

/* From /proc/self/cgroup, the directory holding this process's memory controller files:
 * "/sys/fs/cgroup<path>" for v2 ("0::<path>"), "/sys/fs/cgroup/memory<path>" for v1. */
bool roundtrim_cgroup_dir_from_proc(const char *text, char *dir, size_t cap);

/* Expands %p (the pid) and %% in a path template. False if it does not fit. */
bool roundtrim_expand_path(const char *tmpl, int pid, char *out, size_t cap);

#endif
