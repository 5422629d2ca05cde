#include "runtime/round.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/allocator_ops.h"
#include "runtime/clock.h"
#include "runtime/cuda_pinned.h"
#include "runtime/cuda_track.h"
#include "runtime/log_writer.h"
#include "runtime/metrics_file.h"
#include "runtime/proc_mem.h"
#include "runtime/python_bridge.h"
#include "runtime/python_gil.h"
#include "runtime/state.h"
#include "runtime/thread_counters.h"
#include "runtime/worker.h"
#include "shim/signal_hooks.h"

static unsigned long pending[ROUNDTRIM_SRC_COUNT];

/* Serialises rounds with the exit summary; the worker is the only other user. */
static pthread_mutex_t round_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t round_no, cleanups;
static struct roundtrim_traffic last_total;
static uint64_t last_round_us;
static struct roundtrim_pressure pressure;
static bool exiting; /* set at exit: no round starts any more */

void roundtrim_round_add_pending(enum roundtrim_source src)
{
    __atomic_add_fetch(&pending[src], 1, __ATOMIC_SEQ_CST);
}

static void traffic_delta(struct roundtrim_traffic *d, const struct roundtrim_traffic *now,
                          const struct roundtrim_traffic *before)
{
    d->malloc_calls = now->malloc_calls - before->malloc_calls;
    d->free_calls = now->free_calls - before->free_calls;
    d->malloc_bytes = now->malloc_bytes - before->malloc_bytes;
    d->free_bytes = now->free_bytes - before->free_bytes;
}

/* Why torch.cuda.empty_cache did not run, when that is news: not in processes without torch,
 * or whose torch never initialised CUDA (the common case, said every round otherwise). */
static const char *torch_skip_worth_saying(void)
{
    static const char *const routine[] = {"no_python", "no_torch", "cuda_not_initialized"};
    const char *why = roundtrim_python_skip_reason();
    if (!roundtrim_python_present() || !why)
        return NULL;
    for (size_t i = 0; i < sizeof routine / sizeof routine[0]; i++)
        if (strcmp(why, routine[i]) == 0)
            return NULL;
    return why;
}

/* gc first so that what it frees goes back to the OS in the same cleanup, then the heap, then
 * the device caches. */
static void cleanup(struct roundtrim_round_record *r)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    uint64_t t0 = roundtrim_now_us();
    if (cfg->py_gc && roundtrim_python_present()) {
        if (roundtrim_python_gc(&r->gc_collected, &r->gc_us)) {
            r->gc_ran = true;
            r->actions |= RT_ACT_GC;
        } else {
            r->gc_skipped = roundtrim_python_skip_reason();
        }
    }
    r->actions |= roundtrim_allocator_release(&r->trim_us);
    if (cfg->cuda_empty_cache) {
        if (roundtrim_python_torch_empty_cache(&r->torch_empty_cache_us))
            r->actions |= RT_ACT_TORCH_EMPTY_CACHE;
        else
            r->torch_empty_cache_skipped = torch_skip_worth_saying();
        if (roundtrim_cuda_pool_trim(&r->cuda_pool_trim_bytes))
            r->actions |= RT_ACT_CUDA_POOL_TRIM;
    }
    r->cleanup_us = roundtrim_now_us() - t0;
    cleanups++;
}

static void measure(struct roundtrim_round_record *r)
{
    struct roundtrim_traffic now;
    roundtrim_counters_total(&now);
    traffic_delta(&r->traffic, &now, &last_total);
    last_total = now;
    r->pid = (int)getpid();
    r->ts = roundtrim_wall_seconds();
    r->allocator = roundtrim_allocator_name();
    r->counts_skipped = roundtrim_allocator_counts_skipped();
    r->rss_before = roundtrim_rss_bytes();
    r->rss_peak = roundtrim_rss_peak_bytes();
    if (r->rss_peak < r->rss_before)
        r->rss_peak = r->rss_before;
    r->heap_live_known = roundtrim_allocator_heap_live(&r->heap_live);
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(roundtrim_config()->cgroup_dir, &lim);
    if (lim.cgroup_usage_known) {
        r->cgroup_known = true;
        r->cgroup_usage = lim.cgroup_usage;
        r->cgroup_limit = lim.cgroup_limit;
    }
    struct roundtrim_cuda_pinned pinned;
    if (roundtrim_cuda_round_take(&r->cuda) && roundtrim_cuda_pinned_take(&pinned)) {
        r->cuda.host_alloc_calls = pinned.alloc_calls;
        r->cuda.host_alloc_bytes = pinned.alloc_bytes;
        r->cuda.host_free_calls = pinned.free_calls;
        r->cuda.host_free_bytes = pinned.free_bytes;
        r->cuda.host_live_bytes = pinned.live_bytes;
    }
}

static void finish(struct roundtrim_round_record *r)
{
    r->rss_after = roundtrim_rss_bytes();
    /* The next round's peak starts from here. */
    roundtrim_rss_peak_reset();
    char line[4096];
    size_t n = roundtrim_round_record_format(r, line, sizeof line);
    if (n > 0)
        roundtrim_log_write(line, n);
    roundtrim_metrics_file_update(r, round_no, cleanups);
}

static void run_round(enum roundtrim_source src)
{
    pthread_mutex_lock(&round_lock);
    if (__atomic_load_n(&exiting, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&round_lock);
        return;
    }
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    r.round = ++round_no;
    r.source = roundtrim_source_name(src);
    measure(&r);
    /* Said by the first round marked otherwise than by that signal (a round by signal recorded
     * now was marked before), or else by the exit record without a line on stderr: programs
     * commonly restore the default action while they finalize. */
    if (src != ROUNDTRIM_SRC_SIGNAL && (r.signal_rounds_off = roundtrim_signal_rounds_off_take()))
        roundtrim_signal_rounds_off_warn(r.signal_rounds_off);
    if (roundtrim_round_cleans(roundtrim_config(), r.round))
        cleanup(&r);
    finish(&r);
    last_round_us = roundtrim_now_us();
    pthread_mutex_unlock(&round_lock);
}

void roundtrim_round_run_pending(void)
{
    for (int src = 0; src < ROUNDTRIM_SRC_COUNT; src++) {
        unsigned long n = __atomic_exchange_n(&pending[src], 0, __ATOMIC_SEQ_CST);
        while (n-- > 0)
            run_round((enum roundtrim_source)src);
    }
}

bool roundtrim_round_wants_samples(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    return cfg->interval_s > 0 || cfg->pressure_warn > 0 || cfg->pressure_clean > 0;
}

static void pressure_record(const char *level, const struct roundtrim_mem_limit *lim,
                            const struct roundtrim_round_record *cleaned)
{
    char line[2048];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, "pressure", getpid(),
                               roundtrim_wall_seconds());
    roundtrim_json_str(&j, "level", level);
    roundtrim_json_u64(&j, "used_bytes", lim->used);
    roundtrim_json_u64(&j, "limit_bytes", lim->limit);
    roundtrim_json_u64(&j, "percent", roundtrim_pressure_percent(lim->used, lim->limit));
    roundtrim_json_str(&j, "limit_source", lim->from_cgroup ? "cgroup" : "MemTotal");
    if (cleaned) {
        roundtrim_json_u64(&j, "rss_before", cleaned->rss_before);
        roundtrim_json_u64(&j, "rss_after", cleaned->rss_after);
        roundtrim_json_actions(&j, "cleanup", cleaned->actions);
        roundtrim_json_u64(&j, "cleanup_us", cleaned->cleanup_us);
    }
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}

static void pressure_cleanup(const struct roundtrim_mem_limit *lim)
{
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&round_lock);
    if (__atomic_load_n(&exiting, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&round_lock);
        return;
    }
    r.rss_before = roundtrim_rss_bytes();
    cleanup(&r);
    r.rss_after = roundtrim_rss_bytes();
    pressure_record("clean", lim, &r);
    pthread_mutex_unlock(&round_lock);
}

void roundtrim_round_sample(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (__atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
        return;
    uint64_t now = roundtrim_now_us();
    if (last_round_us == 0)
        last_round_us = now; /* the first timer round is one interval after sampling starts */
    if (cfg->interval_s > 0 && now - last_round_us >= cfg->interval_s * 1000000u) {
        roundtrim_round_add_pending(ROUNDTRIM_SRC_TIMER);
        roundtrim_round_run_pending();
    }
    if (cfg->pressure_warn == 0 && cfg->pressure_clean == 0)
        return;
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(cfg->cgroup_dir, &lim);
    unsigned act = roundtrim_pressure_update(&pressure, cfg, lim.used, lim.limit, now / 1000);
    if (act & RT_PRESSURE_WARN)
        pressure_record("warn", &lim, NULL);
    if (act & RT_PRESSURE_CLEAN)
        pressure_cleanup(&lim);
}

static bool any_pending(void)
{
    for (int src = 0; src < ROUNDTRIM_SRC_COUNT; src++)
        if (__atomic_load_n(&pending[src], __ATOMIC_SEQ_CST))
            return true;
    return false;
}

/* Boundaries seen just before exit still get their records: the worker finishes them, or, when
 * it never started (a signal just before the end), the exiting thread does. */
static void drain_before_exit(void)
{
    if (!any_pending())
        return;
    if (roundtrim_worker_running() && !roundtrim_worker_is_self()) {
        roundtrim_worker_wake();
        for (int i = 0; i < 1000 && any_pending(); i++) { /* 5 s at most */
            struct timespec t = {0, 5 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
        return;
    }
    if (!roundtrim_worker_running())
        roundtrim_round_run_pending();
}

void roundtrim_round_at_exit(void)
{
    drain_before_exit();
    __atomic_store_n(&exiting, true, __ATOMIC_RELEASE);
    /* A round in progress on the worker finishes first, unless it takes too long. The lock is
     * kept: no round may touch libraries that are being finalized from here on. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    pthread_mutex_timedlock(&round_lock, &deadline);
    if (!roundtrim_log_started())
        return;
    struct roundtrim_traffic total;
    roundtrim_counters_total(&total);
    char line[1024];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, "exit", getpid(), roundtrim_wall_seconds());
    roundtrim_json_u64(&j, "rounds", round_no);
    roundtrim_json_u64(&j, "cleanups", cleanups);
    roundtrim_json_traffic(&j, &total, roundtrim_allocator_counts_skipped());
    roundtrim_json_u64(&j, "rss", roundtrim_rss_bytes());
    roundtrim_json_u64(&j, "rss_peak", roundtrim_rss_peak_bytes());
    const char *signal_off = roundtrim_signal_rounds_off_take();
    if (signal_off)
        roundtrim_json_str(&j, "signal_rounds_off", signal_off);
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}

void roundtrim_round_fork_child(void)
{
    pthread_mutex_init(&round_lock, NULL);
    memset(pending, 0, sizeof pending);
    memset(&last_total, 0, sizeof last_total);
    memset(&pressure, 0, sizeof pressure);
    exiting = false;
    round_no = cleanups = 0;
    last_round_us = roundtrim_now_us();
}
