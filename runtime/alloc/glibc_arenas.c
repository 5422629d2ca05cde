#include "runtime/alloc/glibc_arenas.h"

#include <gnu/libc-version.h>
#include <link.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy/parse.h"
#include "policy/procfs.h"
#include "runtime/alloc/page_release.h"
#include "runtime/core/clock.h"
#include "runtime/core/maps_lines.h"
#include "runtime/core/fd_guard.h"
#include "runtime/core/safe_file.h"

/* struct malloc_state on 64-bit glibc 2.27 and later: the lock (an int, glibc's low-level lock),
 * flags, have_fastchunks, ten fastbins, top, last_remainder, then the bins as (fd, bk) pairs,
 * the bin map and the ring of arenas. */
#define OFF_TOP  96
#define OFF_BINS 112
#define NBINS    128
#define OFF_NEXT (OFF_BINS + (NBINS * 2 - 2) * 8 + 16)
/* A chunk: prev_size, size, fd, bk; its first 48 bytes (with the large bins' links) stay. */
#define CHUNK_FD      16
#define CHUNK_BK      24
#define CHUNK_HEADER  48
#define SIZE_FLAGS    7u
#define CHUNKS_MAX    (1u << 24)   /* a list longer than this is no list */
#define CHECK_EVERY   4            /* chunks between two looks at the clock */
#define PIECE         (256u << 10) /* the most one madvise gives back between two looks */
#define NON_MAIN_HEAP ROUNDTRIM_GLIBC_HEAP_MAX
#define FIND_TRIES    4
/* Bins that may look broken while the main arena is looked for without its lock: each thread
 * of the program changes one or two at a time. */
#define BINS_IN_FLUX  8
#define FIND_RETRY_US 2000

static uintptr_t page; /* set before any lock is taken */

static uintptr_t word(uintptr_t at)
{
    return *(const uintptr_t *)at;
}

/* The bin i's header as glibc addresses it: a chunk whose fd and bk are the bin's pair. */
static uintptr_t bin_at(uintptr_t arena, unsigned i)
{
    return arena + OFF_BINS + (uintptr_t)(i - 1) * 16 - CHUNK_FD;
}

static bool in_ranges(const struct roundtrim_arena_walk *w, uintptr_t p, uintptr_t len)
{
    /* The last range that starts at or below p (the maps list them in address order). */
    unsigned lo = 0, hi = w->ranges;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (w->lo[mid] <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    unsigned i = lo - 1;
    return p + len >= p && p + len <= w->hi[i];
}

/* A chunk pointer that may be followed: aligned, inside a heap, and for an arena other than the
 * main one inside one of that arena's own heaps (glibc finds a chunk's arena the same way). */
static bool chunk_ok(const struct roundtrim_arena_walk *w, uintptr_t arena, bool main_arena,
                     bool locked, uintptr_t c)
{
    if ((c & 15) != 0 || !in_ranges(w, c, CHUNK_HEADER))
        return false;
    /* Without the arena's lock the pointer may be stale, its heap gone: not followed. */
    if (main_arena || !locked)
        return true;
    uintptr_t heap = c & ~(NON_MAIN_HEAP - 1);
    return in_ranges(w, heap, sizeof(uintptr_t)) && word(heap) == arena;
}

/* Every bin empty (pointing at itself) or linked both ways to chunks in the heaps, but for at
 * most in_flux of them (read without the arena's lock, a bin the program is changing looks
 * broken for a moment); the lock a value glibc's lock takes. */
static bool arena_ok(const struct roundtrim_arena_walk *w, uintptr_t arena, bool main_arena,
                     bool locked, unsigned in_flux, unsigned *empty_bins)
{
    int lock = __atomic_load_n((const int *)arena, __ATOMIC_RELAXED);
    if (lock < 0 || lock > 2)
        return false;
    unsigned empty = 0, broken = 0;
    for (unsigned i = 1; i < NBINS; i++) {
        uintptr_t b = bin_at(arena, i), fd = word(b + CHUNK_FD), bk = word(b + CHUNK_BK);
        if (fd == b && bk == b) {
            empty++;
            continue;
        }
        if ((fd == b || bk == b || !chunk_ok(w, arena, main_arena, locked, fd) ||
             !chunk_ok(w, arena, main_arena, locked, bk)) &&
            ++broken > in_flux)
            return false;
    }
    *empty_bins = empty;
    return true;
}

static int find_writable_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t *want = data; /* [0] an address in libc's code; out: [1], [2] its data */
    bool ours = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && want[0] >= start && want[0] < start + ph->p_memsz)
            ours = true;
    }
    if (!ours)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            want[1] = info->dlpi_addr + ph->p_vaddr;
            want[2] = want[1] + ph->p_memsz;
            return 1;
        }
    }
    return 1;
}

/* A word read through /proc/self/mem, which answers an error where a direct read would fault:
 * before an address is known to be an arena, the heap it points into may be gone. */
static bool safe_word(int mem_fd, uintptr_t at, uintptr_t *out)
{
    return mem_fd >= 0 && pread(mem_fd, out, sizeof *out, (off_t)at) == (ssize_t)sizeof *out;
}

/* An arena other than the main one lives in its first heap, whose header begins with the
 * arena's address. */
static bool heap_arena_ok(const struct roundtrim_arena_walk *w, int mem_fd, uintptr_t a)
{
    uintptr_t heap = a & ~(NON_MAIN_HEAP - 1), first;
    return in_ranges(w, heap, sizeof(uintptr_t)) && in_ranges(w, a, OFF_NEXT + 8) &&
           safe_word(mem_fd, heap, &first) && first == a;
}

/* From a, the ring of arenas comes back to a, every other one in a heap of its own. */
static bool ring_ok(const struct roundtrim_arena_walk *w, int mem_fd, uintptr_t a)
{
    uintptr_t at = word(a + OFF_NEXT);
    for (unsigned n = 0; n < ROUNDTRIM_ARENAS_MAX; n++) {
        if (at == a)
            return true;
        if ((at & 15) != 0 || !heap_arena_ok(w, mem_fd, at))
            return false;
        at = word(at + OFF_NEXT);
    }
    return false;
}

/* glibc's main arena is a static in libc's data: the one place there that looks like an arena
 * (its bins all point at themselves or into the heaps) whose ring of arenas comes back to it. */
static uintptr_t find_main_arena(const struct roundtrim_arena_walk *w, int mem_fd,
                                 const void *libc_function)
{
    static uintptr_t found;
    unsigned empty;
    /* Once found, it stays where it is (libc's data); its bins are checked under its lock. */
    if (found && ring_ok(w, mem_fd, found))
        return found;
    uintptr_t seg[3] = {(uintptr_t)libc_function, 0, 0};
    dl_iterate_phdr(find_writable_segment, seg);
    if (!seg[1])
        return 0;
    uintptr_t best = 0;
    unsigned matches = 0;
    for (uintptr_t a = (seg[1] + 15) & ~(uintptr_t)15; a + OFF_NEXT + 8 <= seg[2]; a += 16) {
        /* The bins of an unused arena are all empty: one at least must be. */
        if (word(a + OFF_BINS) == 0 || !arena_ok(w, a, true, false, BINS_IN_FLUX, &empty) ||
            empty == 0 || !ring_ok(w, mem_fd, a))
            continue;
        matches++;
        best = a;
    }
    found = matches == 1 ? best : 0;
    return found;
}

/* The heaps: the main one ([heap]) and the other arenas' (64 MiB aligned reservations). A line
 * is judged once the next one is known (a heap is told by what follows it). */
struct range_scan {
    struct roundtrim_arena_walk *w;
    struct roundtrim_map_line prev;
    bool have_prev;
};

static void judge_range(struct range_scan *r, const struct roundtrim_map_line *next)
{
    struct roundtrim_arena_walk *w = r->w;
    const struct roundtrim_map_line *m = &r->prev;
    if (!r->have_prev || w->ranges >= ROUNDTRIM_ARENA_RANGES)
        return;
    uintptr_t lo = 0;
    if ((m->brk_heap && m->writable) || roundtrim_glibc_arena_heap(m, next)) {
        lo = m->start;
    } else if (m->anonymous && !m->brk_heap && m->readable && m->writable && !m->shared &&
               !m->exec) {
        /* The kernel shows adjacent read-write anonymous mappings as one line: two heaps grown
         * full, or a heap beside a block glibc mapped on its own. The part from the first heap
         * boundary in the line on may hold heaps (each still checked by its header). */
        uintptr_t aligned = (m->start + NON_MAIN_HEAP - 1) & ~(NON_MAIN_HEAP - 1);
        if (aligned < m->end && aligned >= m->start)
            lo = aligned;
    }
    if (lo) {
        w->lo[w->ranges] = lo;
        w->hi[w->ranges++] = m->end;
    }
}

static void range_line(void *ctx, const char *line)
{
    struct range_scan *r = ctx;
    struct roundtrim_map_line m;
    if (!roundtrim_parse_map_line(line, &m))
        return;
    judge_range(r, &m);
    r->prev = m;
    r->have_prev = true;
}

static bool read_ranges(struct roundtrim_arena_walk *w)
{
    struct range_scan r = {.w = w};
    w->ranges = 0;
    if (!roundtrim_maps_lines(range_line, &r))
        return false;
    judge_range(&r, NULL);
    return w->ranges > 0;
}

bool roundtrim_arenas_reread_heaps(struct roundtrim_arena_walk *w)
{
    return read_ranges(w);
}

bool roundtrim_arenas_layout_known(void)
{
    if (sizeof(void *) != 8)
        return false;
    long major, minor;
    roundtrim_parse_version(gnu_get_libc_version(), &major, &minor);
    return major == 2 && minor >= 27;
}

/* The ring from the main arena, every arena in a heap of its own. Their bins are checked under
 * each arena's lock, by the holds: read without it, a list the program is changing looks
 * broken. */
static bool arenas_ring(struct roundtrim_arena_walk *w, int mem_fd, uintptr_t main_arena)
{
    uintptr_t a = main_arena;
    do {
        int lock = __atomic_load_n((const int *)a, __ATOMIC_RELAXED);
        if (w->count == ROUNDTRIM_ARENAS_MAX || lock < 0 || lock > 2)
            return false;
        w->arena[w->count++] = a;
        a = word(a + OFF_NEXT);
        if (a != main_arena && !heap_arena_ok(w, mem_fd, a))
            return false;
    } while (a != main_arena);
    return true;
}

static enum roundtrim_skip find_once(const void *libc_function, struct roundtrim_arena_walk *w)
{
    memset(w, 0, sizeof *w);
    if (!read_ranges(w))
        return RT_SKIP_heap_maps_unread;
    int mem_fd = roundtrim_open_read("/proc/self/mem");
    uintptr_t main_arena = find_main_arena(w, mem_fd, libc_function);
    enum roundtrim_skip why = !main_arena                           ? RT_SKIP_main_arena_not_found
                              : !arenas_ring(w, mem_fd, main_arena) ? RT_SKIP_arena_ring_unread
                                                                    : RT_SKIP_NONE;
    if (mem_fd >= 0)
        roundtrim_fd_guard_close(mem_fd);
    return why;
}

enum roundtrim_skip roundtrim_arenas_find(const void *libc_function, struct roundtrim_arena_walk *w)
{
    if (!roundtrim_arenas_layout_known()) {
        memset(w, 0, sizeof *w);
        return RT_SKIP_arena_layout_unknown;
    }
    if (!page)
        page = (uintptr_t)sysconf(_SC_PAGESIZE);
    /* The program changes its heaps while they are read (a thread's new arena, a list in the
     * middle of a change): a read that does not add up is made again. */
    enum roundtrim_skip why = RT_SKIP_NONE;
    for (int i = 0; i < FIND_TRIES; i++) {
        if (i > 0)
            roundtrim_sleep_us(FIND_RETRY_US);
        if (!(why = find_once(libc_function, w)))
            return RT_SKIP_NONE;
    }
    return why;
}

/* glibc's low-level lock: 0 free, 1 taken, 2 taken and a thread waits (in the kernel). */
static void lock_arena(int *m)
{
    int free_ = 0;
    if (__atomic_compare_exchange_n(m, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    while (__atomic_exchange_n(m, 2, __ATOMIC_ACQUIRE) != 0)
        syscall(SYS_futex, m, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

/* True when a thread waited for it meanwhile (it is woken). */
static bool unlock_arena(int *m)
{
    if (__atomic_exchange_n(m, 0, __ATOMIC_RELEASE) <= 1)
        return false;
    syscall(SYS_futex, m, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return true;
}

/* The whole pages inside a free chunk past its links, as malloc_trim gives them back. */
static void chunk_pages(uintptr_t c, uintptr_t size, uintptr_t *lo, uintptr_t *hi)
{
    *lo = (c + CHUNK_HEADER + page - 1) & ~(page - 1);
    *hi = (c + size) & ~(page - 1);
    if (*hi < *lo)
        *hi = *lo;
}

/* The walk's order in an arena: its top chunk (glibc's trim gives back the main arena's with
 * sbrk), then the bins from the largest sizes down, the unsorted bin (any size) last: where the
 * time of a hold runs out, the most memory a call has gone back first. */
#define PLACE_TOP 0
#define PLACES    NBINS /* the top, bins 127 down to 2, then bin 1 */
static unsigned bin_of_place(unsigned place)
{
    return place == PLACES - 1 ? 1 : NBINS - place;
}

/* One hold's progress, its clock and its calls. */
struct hold {
    struct roundtrim_arena_walk *w;
    struct roundtrim_release_cost *cost;
    struct roundtrim_release_session session;
    struct roundtrim_arena_hold *out;
    uint64_t t0, budget_us, fit_units;
};

static uint64_t hold_elapsed(const struct hold *h)
{
    return roundtrim_now_us() - h->t0;
}

static void flush(struct hold *h)
{
    struct roundtrim_arena_walk *w = h->w;
    if (w->batched > 0) {
        struct roundtrim_release_done d = {0};
        uint64_t t = roundtrim_now_us();
        roundtrim_page_release(&h->session, w->batch, w->batched, &d);
        roundtrim_release_cost_learn(h->cost, w->batch_units, roundtrim_now_us() - t);
        h->out->calls += d.calls;
        h->out->advised += d.bytes;
    }
    w->batched = 0;
    w->batch_units = 0;
    uint64_t spent = hold_elapsed(h);
    h->fit_units =
        roundtrim_release_units_fitting(h->cost, h->budget_us > spent ? h->budget_us - spent : 0);
}

/* Adds a range to the batch, a call made when the batch is full or holds what the hold's time
 * left allows. True when the hold's time is up after that call. */
static bool gather(struct hold *h, uintptr_t lo, uintptr_t len)
{
    struct roundtrim_arena_walk *w = h->w;
    w->batch[w->batched].iov_base = (void *)lo;
    w->batch[w->batched++].iov_len = len;
    w->batch_units += roundtrim_release_units(len / page);
    if (w->batched < ROUNDTRIM_RELEASE_BATCH_MAX && w->batch_units < h->fit_units)
        return false;
    flush(h);
    return hold_elapsed(h) >= h->budget_us;
}

/* Gathers a free chunk's whole pages from byte offset on, in pieces: true when the hold stops
 * inside it (*offset says where the next one goes on). */
static bool gather_chunk(struct hold *h, uintptr_t c, uintptr_t size, uintptr_t *offset)
{
    uintptr_t lo, hi;
    chunk_pages(c, size, &lo, &hi);
    for (uintptr_t at = lo + *offset; at < hi;) {
        uintptr_t len = hi - at < PIECE ? hi - at : PIECE;
        at += len;
        if (gather(h, at - len, len)) {
            *offset = at < hi ? at - lo : 0;
            return at < hi;
        }
    }
    *offset = 0;
    return false;
}

/* The top chunk of the arena (the main arena's reaches the end of the brk heap; another's, the
 * end of its heap's writable part). One outside the heaps known here (glibc fell back to mmap
 * for the main arena) is left alone. True when the hold stops. */
static bool walk_top(struct hold *h, uintptr_t arena, bool main_arena, unsigned i)
{
    struct roundtrim_arena_walk *w = h->w;
    uintptr_t top = word(arena + OFF_TOP), size;
    if (!chunk_ok(w, arena, main_arena, true, top) ||
        (size = word(top + 8) & ~(uintptr_t)SIZE_FLAGS) < 32 || !in_ranges(w, top, size))
        return false;
    bool inside = gather_chunk(h, top, size, &w->offset[i]);
    return inside || hold_elapsed(h) >= h->budget_us;
}

enum walk_result { WALK_DONE, WALK_STOPPED, WALK_BROKEN };

/* The chunks of one bin from where the last hold stopped. */
static enum walk_result walk_bin(struct hold *h, uintptr_t arena, bool main_arena, unsigned i)
{
    struct roundtrim_arena_walk *w = h->w;
    uintptr_t b = bin_at(arena, bin_of_place(w->place[i])), c = word(b + CHUNK_FD);
    uint64_t walked = 0;
    for (uint64_t n = 0; c != b; n++) {
        if (n >= CHUNKS_MAX || !chunk_ok(w, arena, main_arena, true, c))
            return WALK_BROKEN;
        uintptr_t size = word(c + 8) & ~(uintptr_t)SIZE_FLAGS, next = word(c + CHUNK_FD);
        if (size < 32 || !in_ranges(w, c, size) ||
            (next != b &&
             (!chunk_ok(w, arena, main_arena, true, next) || word(next + CHUNK_BK) != c)))
            return WALK_BROKEN;
        /* Chunks an earlier hold did are passed over (the list may have moved: a few are done
         * twice or missed, and the next trim finds them). */
        if (n >= w->skip[i]) {
            if (n > w->skip[i])
                w->offset[i] = 0;
            if (gather_chunk(h, c, size, &w->offset[i])) {
                w->skip[i] = n;
                return WALK_STOPPED;
            }
            bool up = ++walked % CHECK_EVERY == 0 && hold_elapsed(h) >= h->budget_us;
            if (up || (w->batched == 0 && hold_elapsed(h) >= h->budget_us)) {
                flush(h);
                w->skip[i] = n + 1;
                return WALK_STOPPED;
            }
        }
        c = next;
    }
    return WALK_DONE;
}

bool roundtrim_arenas_hold(struct roundtrim_arena_walk *w, unsigned i, uint64_t budget_us,
                           struct roundtrim_release_cost *cost, struct roundtrim_arena_hold *out)
{
    memset(out, 0, sizeof *out);
    uintptr_t arena = w->arena[i];
    bool main_arena = i == 0, ok = true; /* the main arena first, then its ring */
    struct hold h = {.w = w, .cost = cost, .out = out, .budget_us = budget_us};
    w->batched = 0;
    w->batch_units = 0;
    /* The pidfd is opened before the lock is taken and closed after it is let go. */
    roundtrim_page_release_begin(&h.session);
    int *lock = (int *)arena;
    lock_arena(lock);
    h.t0 = roundtrim_now_us();
    h.fit_units = roundtrim_release_units_fitting(cost, budget_us);
    unsigned empty;
    if (!arena_ok(w, arena, main_arena, true, 0, &empty)) {
        ok = false;
        goto out;
    }
    for (; w->place[i] < PLACES; w->place[i]++, w->skip[i] = w->offset[i] = 0) {
        if (w->place[i] == PLACE_TOP) {
            if (walk_top(&h, arena, main_arena, i)) {
                if (w->offset[i] == 0)
                    w->place[i]++;
                goto out;
            }
            continue;
        }
        enum walk_result r = walk_bin(&h, arena, main_arena, i);
        if (r == WALK_BROKEN) {
            ok = false;
            goto out;
        }
        if (r == WALK_STOPPED)
            goto out;
    }
    out->arena_done = true;
out:
    flush(&h); /* whatever was gathered goes back before the lock is let go */
    if (!ok)
        out->arena_done = true;
    w->done[i] = out->arena_done;
    out->us = roundtrim_now_us() - h.t0;
    out->waited = unlock_arena(lock);
    roundtrim_page_release_end(&h.session);
    return ok;
}
