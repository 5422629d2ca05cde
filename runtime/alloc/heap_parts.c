#include "runtime/alloc/heap_parts.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/fd_guard.h"
#include "runtime/core/maps_lines.h"
#include "runtime/core/safe_file.h"

/* Resident bytes of [start, end), asked of the kernel 16 MiB at a time. Pages a racing munmap
 * took away are simply not counted. */
static uint64_t resident_bytes(uintptr_t start, uintptr_t end)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    uint64_t pages = 0;
    for (uintptr_t at = start; at < end;) {
        uintptr_t len = end - at;
        if (len > sizeof vec * (uintptr_t)page)
            len = sizeof vec * (uintptr_t)page;
        if (mincore((void *)at, len, vec) != 0)
            break;
        size_t n = (len + (uintptr_t)page - 1) / (uintptr_t)page;
        for (size_t i = 0; i < n; i++)
            pages += vec[i] & 1;
        at += len;
    }
    return pages * (uint64_t)page;
}

#define ARENA_GROUPS 64

struct arena_scan {
    struct roundtrim_map_line prev;
    bool have_prev;
    uint64_t resident;
    /* Resident bytes per arena: a trim holds one arena's lock at a time. */
    struct {
        uintptr_t arena;
        uint64_t resident;
    } group[ARENA_GROUPS];
    unsigned groups;
    bool grouping_failed;
    int mem_fd; /* /proc/self/mem, opened at the first heap that needs it; -1 not yet */
    uint64_t mmapped_usable; /* large blocks' usable bytes, by their chunk headers */
};

/* The arena a non-main heap belongs to: the first word of the heap (glibc's heap_info starts
 * with its arena's address). Read through /proc/self/mem, which answers an error where a direct
 * read would fault (a heap can be unmapped by another thread at any moment), and which no
 * seccomp filter of the syscalls that read another process's memory stops. */
static bool open_mem(struct arena_scan *a)
{
    if (a->mem_fd == -1)
        a->mem_fd = roundtrim_open_read("/proc/self/mem");
    return a->mem_fd >= 0;
}

enum heap_header { HEAP_UNREAD, HEAP_VALID, HEAP_NOT_ONE };

/* glibc's heap_info begins: the arena, the previous heap, the heap's size and the bytes made
 * read-write (the mapping's length): a program's own mapping that merely starts on a 64 MiB
 * boundary (eight 8 MiB mmaps merged into one) does not have them. */
static enum heap_header heap_arena(struct arena_scan *a, const struct roundtrim_map_line *m,
                                   uintptr_t *arena)
{
    if (!open_mem(a))
        return HEAP_UNREAD;
    uint64_t info[4];
    if (pread(a->mem_fd, info, sizeof info, (off_t)m->start) != (ssize_t)sizeof info)
        return HEAP_UNREAD;
    uint64_t len = m->end - m->start;
    if (info[0] == 0 || info[3] != len || info[2] == 0 || info[2] > info[3])
        return HEAP_NOT_ONE;
    *arena = (uintptr_t)info[0];
    return HEAP_VALID;
}

static void add_to_group(struct arena_scan *a, uintptr_t arena, uint64_t bytes)
{
    for (unsigned i = 0; i < a->groups; i++)
        if (a->group[i].arena == arena) {
            a->group[i].resident += bytes;
            return;
        }
    if (a->groups < ARENA_GROUPS) {
        a->group[a->groups].arena = arena;
        a->group[a->groups++].resident = bytes;
    } else {
        a->grouping_failed = true; /* more arenas than kept: no share is claimed */
    }
}

/* Large blocks are mappings of their own, next to each other often merged into one by the
 * kernel: each starts with glibc's chunk header, read through /proc/self/mem (a guard page or a
 * racing munmap answers an error). Smaller mappings than the smallest threshold are not looked
 * at: one read per candidate, not per mapping. */
#define LARGE_BLOCK_MIN ((uintptr_t)128 << 10)

static void count_large_blocks(struct arena_scan *a, const struct roundtrim_map_line *m)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    if (!m->unnamed || !m->readable || !m->writable || m->shared || m->exec ||
        m->end - m->start < LARGE_BLOCK_MIN || !open_mem(a))
        return;
    for (uintptr_t at = m->start; at < m->end;) {
        uint64_t header[2];
        if (pread(a->mem_fd, header, sizeof header, (off_t)at) != (ssize_t)sizeof header)
            return;
        uint64_t len =
            roundtrim_glibc_mmapped_chunk(header[0], header[1], m->end - at, (uint64_t)page);
        if (!len)
            return;
        a->mmapped_usable += len - ROUNDTRIM_GLIBC_CHUNK_HEADER;
        at += len;
    }
}

/* Each line is judged once the next one is known (a heap is told by what follows it). */
static void judge(struct arena_scan *a, const struct roundtrim_map_line *next)
{
    if (!a->have_prev)
        return;
    const struct roundtrim_map_line *m = &a->prev;
    bool main_heap = m->brk_heap && m->writable;
    uintptr_t arena = UINTPTR_MAX; /* the main arena's [heap]: no address of an arena */
    enum heap_header h = main_heap                             ? HEAP_VALID
                         : roundtrim_glibc_arena_heap(m, next) ? heap_arena(a, m, &arena)
                                                               : HEAP_NOT_ONE;
    if (h == HEAP_NOT_ONE) {
        count_large_blocks(a, m);
        return;
    }
    uint64_t bytes = resident_bytes(m->start, m->end);
    a->resident += bytes;
    if (h == HEAP_UNREAD)
        a->grouping_failed = true;
    else
        add_to_group(a, arena, bytes);
}

static void scan_line(void *ctx, const char *line)
{
    struct arena_scan *a = ctx;
    struct roundtrim_map_line m;
    if (!roundtrim_parse_map_line(line, &m))
        return;
    judge(a, &m);
    a->prev = m;
    a->have_prev = true;
}

/* glibc's arenas: their resident bytes, from /proc/self/maps and mincore (a page-table walk of
 * the arenas alone), and the largest share of one arena in permille (0: not known). False when
 * the maps could not be read. */
static bool glibc_arenas_resident(uint64_t *resident, uint32_t *largest_permille,
                                  uint64_t *mmapped_usable)
{
    struct arena_scan a = {0};
    a.mem_fd = -1;
    bool ok = roundtrim_maps_lines(scan_line, &a);
    judge(&a, NULL);
    if (a.mem_fd >= 0)
        roundtrim_fd_guard_close(a.mem_fd);
    *resident = a.resident;
    *mmapped_usable = a.mmapped_usable;
    uint64_t largest = 0;
    for (unsigned i = 0; i < a.groups; i++)
        if (a.group[i].resident > largest)
            largest = a.group[i].resident;
    *largest_permille =
        a.grouping_failed || a.resident == 0 ? 0 : (uint32_t)(largest * 1000 / a.resident);
    return ok;
}

void roundtrim_heap_parts_read(const struct roundtrim_traffic *total,
                               struct roundtrim_heap_parts *out)
{
    *out = (struct roundtrim_heap_parts){0};
    enum roundtrim_skip counts_skipped = roundtrim_allocator_counts_skipped();
    struct roundtrim_je_stats je;
    bool have_je = roundtrim_allocator_je_stats(&je);
    if (!counts_skipped) {
        out->live_known = true;
        out->live = roundtrim_counters_live(total);
    } else if (have_je) {
        out->live_known = true;
        out->live = je.allocated;
    } else {
        out->live_skipped = counts_skipped;
    }
    switch (roundtrim_allocator_kind()) {
    case RT_ALLOC_JEMALLOC:
        if (!have_je) {
            out->free_skipped = RT_SKIP_allocator_stats_off;
            return;
        }
        /* Dirty and muzzy pages, and the unused part of active pages: resident, no live data,
         * no allocator metadata. */
        out->free_known = true;
        out->free_resident =
            je.resident > je.allocated + je.metadata ? je.resident - je.allocated - je.metadata : 0;
        return;
    case RT_ALLOC_GLIBC: {
        if (!out->live_known) {
            out->free_skipped = counts_skipped;
            return;
        }
        uint64_t resident, mapped;
        if (!glibc_arenas_resident(&resident, &out->largest_arena_permille, &mapped)) {
            out->free_skipped = RT_SKIP_maps_unreadable;
            return;
        }
        /* The arenas hold every live block but the large ones, which are mappings of their
         * own: what else is resident in them is free. */
        uint64_t big = roundtrim_counters_mmapped_live(total);
        uint64_t in_arenas = out->live > big ? out->live - big : 0;
        out->free_known = true;
        out->free_resident = resident > in_arenas ? resident - in_arenas : 0;
        /* What glibc's own headers hold beyond what was counted: live program memory. */
        out->uncounted = mapped > big ? mapped - big : 0;
        return;
    }
    case RT_ALLOC_OTHER:
        break;
    }
    out->free_skipped = RT_SKIP_allocator_unknown;
}
