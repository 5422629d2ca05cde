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

/* "name 1234" lines, as in a cgroup's memory.stat: the value (bytes there). */
bool roundtrim_parse_stat_field(const char *text, const char *name, uint64_t *value);

/* A cgroup usage file: a single number of bytes. */
bool roundtrim_parse_cgroup_usage(const char *text, uint64_t *usage);

/* From /proc/self/cgroup, the directory holding this process's memory controller files:
 * "/sys/fs/cgroup<path>" for v2 ("0::<path>"), "/sys/fs/cgroup/memory<path>" for v1. */
bool roundtrim_cgroup_dir_from_proc(const char *text, char *dir, size_t cap);

/* The figures of /proc/self/status that split the resident set (bytes; each false when absent:
 * kernels before 4.5 have no RssAnon, RssFile, RssShmem). */
struct roundtrim_status_mem {
    uint64_t rss, anon, file, shmem;
    bool have_rss, have_parts;
};
void roundtrim_parse_status_mem(const char *text, struct roundtrim_status_mem *out);

/* One line of /proc/self/maps. */
struct roundtrim_map_line {
    uintptr_t start, end;
    bool readable, writable, exec, shared;
    bool anonymous; /* no file: inode 0 and no path, or a bracketed name such as [heap] */
    bool brk_heap;  /* "[heap]" */
    bool unnamed;   /* anonymous without even a bracketed name (what mmap(2) gives) */
    uint64_t dev;   /* the file's device, major << 32 | minor (0 for anonymous memory) */
    uint64_t inode; /* the file's inode (0 for anonymous memory) */
};
/* False when the line is not a maps line. */
bool roundtrim_parse_map_line(const char *line, struct roundtrim_map_line *out);

/* glibc's arenas other than the main one live in heaps of HEAP_MAX_SIZE (64 MiB on 64-bit
 * systems), aligned to that size: a read-write anonymous private mapping that starts on such a
 * boundary, at most that long, and either fills it or is followed (next, may be NULL) by the
 * inaccessible rest of the reservation. */
#define ROUNDTRIM_GLIBC_HEAP_MAX ((uintptr_t)64 << 20)
bool roundtrim_glibc_arena_heap(const struct roundtrim_map_line *m,
                                const struct roundtrim_map_line *next);

/* A large block glibc's malloc served with a mapping of its own starts at its mapping's start
 * with a chunk header: a zero prev_size, and a size of whole pages with IS_MMAPPED set (and not
 * NON_MAIN_ARENA), no longer than room (the bytes left in the mapping). Returns the chunk's
 * length, or 0 when the header is not one. */
#define ROUNDTRIM_GLIBC_CHUNK_HEADER 16
uint64_t roundtrim_glibc_mmapped_chunk(uint64_t prev_size, uint64_t size, uint64_t room,
                                       uint64_t page);

/* Expands %p (the pid), %h (host, the host name, as roundtrim_safe_host_name leaves it) and %%
 * in a path template. False if it does not fit. */
bool roundtrim_expand_path(const char *tmpl, int pid, const char *host, char *out, size_t cap);

/* A host name as a part of a file name: every byte but letters, digits, '-', '_' and '.' becomes
 * '_', and so does a leading '.' (no "..", no hidden file); an empty name becomes "_". The name
 * comes from whoever set up the process's UTS namespace (a container runtime, a pod's spec). */
void roundtrim_safe_host_name(const char *name, char *out, size_t cap);

#endif
