#include "runtime/alloc/heap_parts.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/procfs.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
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

struct arena_scan {
    struct roundtrim_map_line prev;
    bool have_prev;
    uint64_t resident;
};

/* Each line is judged once the next one is known (a heap is told by what follows it). */
static void judge(struct arena_scan *a, const struct roundtrim_map_line *next)
{
    if (!a->have_prev)
        return;
    const struct roundtrim_map_line *m = &a->prev;
    if ((m->brk_heap && m->writable) || roundtrim_glibc_arena_heap(m, next)) {
        a->resident += resident_bytes(m->start, m->end);
    }
}

static void scan_line(struct arena_scan *a, const char *line)
{
    struct roundtrim_map_line m;
    if (!roundtrim_parse_map_line(line, &m))
        return;
    judge(a, &m);
    a->prev = m;
    a->have_prev = true;
}

/* glibc's arenas: their resident bytes, from /proc/self/maps and mincore (a page-table walk of
 * the arenas alone). False when the maps could not be read. */
static bool glibc_arenas_resident(uint64_t *resident)
{
    int fd = roundtrim_open_read("/proc/thread-self/maps");
    if (fd < 0)
        fd = roundtrim_open_read("/proc/self/maps");
    if (fd < 0)
        return false;
    struct arena_scan a = {0};
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
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            *nl = '\0';
            scan_line(&a, line);
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) /* a line longer than the buffer: a path; dropped */
            have = 0;
    }
    close(fd);
    if (have > 0) {
        buf[have] = '\0';
        scan_line(&a, buf);
    }
    judge(&a, NULL);
    *resident = a.resident;
    return ok;
}

void roundtrim_heap_parts_read(const struct roundtrim_traffic *total,
                               struct roundtrim_heap_parts *out)
{
    *out = (struct roundtrim_heap_parts){0};
    const char *counts_skipped = roundtrim_allocator_counts_skipped();
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
            out->free_skipped = "allocator_stats_off";
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
        uint64_t resident;
        if (!glibc_arenas_resident(&resident)) {
            out->free_skipped = "maps_unreadable";
            return;
        }
        /* The arenas hold every live block but the large ones, which are mappings of their
         * own: what else is resident in them is free. */
        uint64_t big = roundtrim_counters_mmapped_live(total);
        uint64_t in_arenas = out->live > big ? out->live - big : 0;
        out->free_known = true;
        out->free_resident = resident > in_arenas ? resident - in_arenas : 0;
        return;
    }
    case RT_ALLOC_OTHER:
        break;
    }
    out->free_skipped = "allocator_unknown";
}
