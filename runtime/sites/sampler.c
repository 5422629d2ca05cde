#include "runtime/sites/sampler.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <time.h>

#include "policy/sample_math.h"
#include "runtime/boundary/boundary.h"
#include "runtime/python/frames.h"
#include "runtime/sites/native_stack.h"
#include "runtime/sites/site_table.h"
#include "runtime/threads/worker_thread.h"
#include "runtime/core/hash.h"

/* Frames taken beyond the kept depth: roundtrim's own (the hook, this file) come first. */
#define OWN_FRAMES_MAX 6

static uint64_t mean; /* bytes; set by roundtrim_sampler_start from ROUNDTRIM_SITES_SAMPLE */
static enum roundtrim_skip skipped = RT_SKIP_off;
/* Why native frames are not taken while sampling runs (RT_SKIP_NONE when they are). */
static enum roundtrim_skip native_skipped;
static uintptr_t own_lo, own_hi; /* roundtrim's own text, whose frames are left out */
static uint64_t samples, dropped, sites_dropped;
static uint32_t reported;
static __thread bool sampling_now;
/* Stacks are walked with the loader's lock (dl_iterate_phdr) and libunwind's own taken: a fork
 * while another thread walks would leave them held in the child for good. A fork waits for the
 * walks in flight and holds new ones off until it is done. */
static unsigned walks_in_flight;
/* Forks in progress (their prepare handler ran, their parent handler not yet): a count, as
 * threads forking at once run their handlers interleaved. */
static unsigned fork_pending;

static int find_own_range(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t base = (uintptr_t)arg;
    if (info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!own_lo || lo < own_lo)
            own_lo = lo;
        if (hi > own_hi)
            own_hi = hi;
    }
    return 1;
}

enum roundtrim_skip roundtrim_sampler_start(uint64_t mean_bytes)
{
    mean = mean_bytes;
    /* Without libunwind, sampling still runs with the Python frames, which are read from the
     * interpreter without any unwinding. */
    if (!roundtrim_native_stack_init())
        native_skipped = RT_SKIP_libunwind_missing;
    Dl_info self;
    if (dladdr((void *)roundtrim_sampler_start, &self) && self.dli_fbase)
        dl_iterate_phdr(find_own_range, self.dli_fbase);
    if (!roundtrim_site_table_init() || !roundtrim_sample_table_init()) {
        skipped = RT_SKIP_no_memory;
        return skipped;
    }
    skipped = RT_SKIP_NONE;
    __atomic_store_n(&roundtrim_sampling_on, true, __ATOMIC_RELEASE);
    /* A fast path suspended for a pending worker start keeps waiting for it; resuming then
     * picks the sampling mode. */
    if (!__atomic_load_n(&roundtrim_worker_start_wanted, __ATOMIC_ACQUIRE))
        roundtrim_fast_path_resume();
    return RT_SKIP_NONE;
}

static uint64_t started_late_in;

enum roundtrim_skip roundtrim_sampler_start_late(uint64_t mean_bytes, uint64_t round)
{
    if (!skipped)
        return RT_SKIP_NONE;
    if (!__atomic_load_n(&roundtrim_glibc_sizes, __ATOMIC_RELAXED))
        return RT_SKIP_allocator_not_glibc;
    enum roundtrim_skip why = roundtrim_sampler_start(mean_bytes);
    if (!why)
        started_late_in = round;
    return why;
}

uint64_t roundtrim_sampler_since(void)
{
    return started_late_in;
}

enum roundtrim_skip roundtrim_sampler_skipped(void)
{
    return skipped;
}

enum roundtrim_skip roundtrim_sampler_native_skipped(void)
{
    return skipped ? skipped : native_skipped;
}

uint64_t roundtrim_sampler_mean(void)
{
    return mean;
}

static uint32_t round_in_progress(void)
{
    return (uint32_t)(roundtrim_boundaries_seen() + 1);
}

/* The byte count at which the next sample is due, counted from `at`. */
static uint64_t next_mark(uint64_t *rng, uint64_t at, const void *salt)
{
    if (*rng == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        *rng = roundtrim_hash_mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32),
                                  (uintptr_t)salt) |
               1;
    }
    return at + roundtrim_sample_interval(roundtrim_sample_random(rng), mean);
}

static void draw_next(struct roundtrim_thread_counters *c)
{
    c->sample_at = next_mark(&c->rng, c->malloc_bytes, c);
}

/* The caller's native frames, roundtrim's own left out wherever they are (the hooks on top, the
 * interpreter's object allocator wrapped in the middle). */
static int native_frames(uintptr_t *out)
{
    void *ips[ROUNDTRIM_SITE_NATIVE_MAX + OWN_FRAMES_MAX];
    int n = roundtrim_native_stack(ips, (int)(sizeof ips / sizeof ips[0]));
    int depth = 0;
    for (int i = 0; i < n && depth < ROUNDTRIM_SITE_NATIVE_MAX; i++)
        if ((uintptr_t)ips[i] < own_lo || (uintptr_t)ips[i] >= own_hi)
            out[depth++] = (uintptr_t)ips[i];
    return depth;
}

static int python_frames(struct roundtrim_site_py *out)
{
    if (roundtrim_python_frames_unavailable())
        return 0;
    struct roundtrim_py_frame f[ROUNDTRIM_SITE_PYTHON_MAX];
    int n = roundtrim_python_stack_kept(f, ROUNDTRIM_SITE_PYTHON_MAX);
    for (int i = 0; i < n; i++) {
        out[i].code = f[i].code;
        out[i].line = f[i].line;
        out[i].names_key = f[i].names_key;
        roundtrim_code_names_note(f[i].code, f[i].names_key);
    }
    return n < 0 ? 0 : n;
}

static void take_sample(void *p, size_t bytes);

/* The object allocator's wrapper whose sample this thread takes, 0 for malloc's. */
static __thread uint32_t sampling_wrapper;

void roundtrim_sample_due(void *p, size_t bytes, struct roundtrim_thread_counters *c)
{
    if (sampling_now) {
        /* roundtrim's own, made while this thread takes a sample (take_sample): counted on the
         * uncounted sink, and remembered while it lives, so that its free is not counted as
         * the program's either (libunwind's thread data is freed when a later thread takes
         * over the stack). With the table full its free is counted after all. */
        roundtrim_sample_table_insert_own(p, bytes);
        return;
    }
    if (c->sample_at == 0 || roundtrim_in_object_allocator) {
        /* A thread's first allocation draws its first distance; an allocation the interpreter's
         * object allocator makes is not sampled (its own countdown samples the object). */
        if (!roundtrim_thread_counted(c))
            c->sample_at = UINT64_MAX;
        else
            draw_next(c);
        return;
    }
    if (!__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_ACQUIRE) ||
        !roundtrim_thread_counted(c)) {
        c->sample_at = UINT64_MAX;
        return;
    }
    draw_next(c);
    take_sample(p, bytes);
}

__thread bool roundtrim_in_object_allocator;
__thread struct roundtrim_object_countdown roundtrim_object_countdown;

void roundtrim_sample_object_due(void *p, size_t bytes, uint32_t wrapper)
{
    struct roundtrim_object_countdown *o = &roundtrim_object_countdown;
    if (!__atomic_load_n(&roundtrim_sampling_on, __ATOMIC_ACQUIRE)) {
        o->at = UINT64_MAX;
        return;
    }
    bool first = o->at == 0;
    o->at = next_mark(&o->rng, o->bytes, o);
    if (first || sampling_now)
        return;
    if (!roundtrim_thread_counted(roundtrim_thread_block())) { /* roundtrim's own threads */
        o->at = UINT64_MAX;
        return;
    }
    sampling_wrapper = wrapper;
    take_sample(p, bytes);
    sampling_wrapper = 0;
}

/* The stack of the block p of `bytes` bytes, interned, and the block remembered. */
static void record_sample(void *p, size_t bytes)
{
    /* Once half the stack sites are taken in the program's start (its first round: imports, a
     * model loaded once), the rest of it is counted at one site, without a walk: a PyTorch
     * process's imports alone have more stacks than the table has entries, and the sites are
     * for what grows from round to round. */
    if (round_in_progress() <= 1 && roundtrim_site_stacks_taken() >= ROUNDTRIM_SITES_MAIN / 2) {
        int32_t start = roundtrim_site_start();
        __atomic_add_fetch(&samples, 1, __ATOMIC_RELAXED);
        uint64_t w = roundtrim_sample_weight(bytes, mean);
        if (start < 0)
            __atomic_add_fetch(&sites_dropped, 1, __ATOMIC_RELAXED);
        else if (roundtrim_sample_table_insert(p, roundtrim_site_ref(start), 1, w,
                                               sampling_wrapper))
            roundtrim_site_add_alloc(start, w);
        else
            __atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_add_fetch(&walks_in_flight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&fork_pending, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&walks_in_flight, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    uintptr_t frames[ROUNDTRIM_SITE_NATIVE_MAX];
    struct roundtrim_site_py py[ROUNDTRIM_SITE_PYTHON_MAX];
    int depth = native_frames(frames);
    __atomic_sub_fetch(&walks_in_flight, 1, __ATOMIC_SEQ_CST);
    int py_depth = python_frames(py);
    int32_t site = roundtrim_site_intern(frames, depth, py, py_depth);
    __atomic_add_fetch(&samples, 1, __ATOMIC_RELAXED);
    if (site < 0) {
        __atomic_add_fetch(&sites_dropped, 1, __ATOMIC_RELAXED);
    } else {
        uint64_t w = roundtrim_sample_weight(bytes, mean);
        if (roundtrim_sample_table_insert(p, roundtrim_site_ref(site), round_in_progress(), w,
                                          sampling_wrapper))
            roundtrim_site_add_alloc(site, w);
        else
            __atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
        roundtrim_site_unpin(site); /* counted: the worker may give the site back once freed */
    }
}

/* What is allocated and freed while the sample is taken (libunwind's thread data, the
 * interpreter's frame reader's) is roundtrim's, not the program's: the thread counts on its
 * uncounted sink meanwhile, whose countdown at 0 sends each of those allocations to
 * roundtrim_sample_due. */
static void take_sample(void *p, size_t bytes)
{
    struct roundtrim_thread_counters *counting = roundtrim_counting_pause();
    roundtrim_thread_block()->sample_at = 0;
    sampling_now = true;
    record_sample(p, bytes);
    sampling_now = false;
    roundtrim_counting_resume(counting);
}

/* A block of roundtrim's own is being freed, on a path that counts the free on the thread's
 * block (before or after this call): taken off again, with the mapped bytes glibc's large blocks
 * take off. */
static void uncount_own_free(const void *p, uint64_t bytes)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    c->free_calls--;
    c->free_bytes -= bytes;
    if (roundtrim_glibc_sizes)
        roundtrim_count_mmapped(c, roundtrim_glibc_header(p), bytes, false);
}

void roundtrim_sample_freed(const void *p)
{
    uint32_t site;
    uint64_t w;
    switch (roundtrim_sample_table_remove(
        p, round_in_progress(), __atomic_load_n(&reported, __ATOMIC_ACQUIRE), &site, &w)) {
    case ROUNDTRIM_SAMPLE_PROGRAM:
        roundtrim_site_add_free(site, w);
        break;
    case ROUNDTRIM_SAMPLE_OWN:
        uncount_own_free(p, w);
        break;
    case ROUNDTRIM_SAMPLE_NOT_FOUND:
        break;
    }
}

void roundtrim_sampler_totals(struct roundtrim_sampler_totals *out)
{
    out->samples = __atomic_load_n(&samples, __ATOMIC_RELAXED);
    out->dropped = __atomic_load_n(&dropped, __ATOMIC_RELAXED);
    out->sites_dropped = __atomic_load_n(&sites_dropped, __ATOMIC_RELAXED);
}

void roundtrim_sampler_reported(uint32_t round)
{
    __atomic_store_n(&reported, round, __ATOMIC_RELEASE);
}

void roundtrim_sampler_fork_prepare(void)
{
    __atomic_add_fetch(&fork_pending, 1, __ATOMIC_SEQ_CST);
    /* A walk takes microseconds; the bound only guards against the unforeseen. */
    for (int i = 0; i < 200000 && __atomic_load_n(&walks_in_flight, __ATOMIC_SEQ_CST); i++)
        sched_yield();
}

void roundtrim_sampler_fork_parent(void)
{
    __atomic_sub_fetch(&fork_pending, 1, __ATOMIC_SEQ_CST);
}

void roundtrim_sampler_fork_child(void)
{
    walks_in_flight = 0;
    fork_pending = 0;
    reported = 0;
    started_late_in = 0;
    sampling_now = false;
    roundtrim_native_stack_fork_child();
    roundtrim_sample_table_fork_child();
    roundtrim_site_table_fork_child();
}
