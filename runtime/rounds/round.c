#include "runtime/rounds/round.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/cleanup_policy.h"
#include "policy/pressure.h"
#include "policy/round_record.h"
#include "policy/trim_steps.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/core/clock.h"
#include "runtime/cuda/track.h"
#include "runtime/output/log_writer.h"
#include "runtime/output/sites_record.h"
#include "runtime/sites/object_sampler.h"
#include "runtime/output/holders_record.h"
#include "runtime/output/metrics_file.h"
#include "runtime/core/proc_mem.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/cupy_pools.h"
#include "runtime/python/gil.h"
#include "runtime/python/hook.h"
#include "runtime/python/program_gc.h"
#include "runtime/rounds/diagnose.h"
#include "runtime/rounds/memory_parts.h"
#include "runtime/rounds/rss_peak.h"
#include "runtime/rounds/trim_holds.h"
#include "runtime/boundary/signal_rounds.h"
#include "runtime/core/settings.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/threads/worker_thread.h"

/* Serialises rounds with the exit summary; the worker is the only other user. */
static pthread_mutex_t round_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t round_no;         /* rounds recorded, merged ones included */
static uint64_t rounds_unwritten; /* of those, the ones whose record the log could not take */
static uint64_t cleanups;
static struct roundtrim_boundary_snap last; /* the previous boundary's counters */
static uint64_t last_round_us, last_pressure_us;
static struct roundtrim_pressure pressure;
static bool exiting;    /* the process is ending: rounds are still recorded, nothing is cleaned */
static bool exit_begun; /* the exit path ran (exit, or _exit): once per process */
static bool in_round;   /* a boundary was taken from the queue and is being recorded */
/* Set on a thread that ends the process through _exit, which may be called from a signal handler
 * that interrupted malloc or the driver: when it records rounds itself it reads nothing that
 * takes the allocator's or the driver's locks. */
static bool exit_async;
static __thread bool exit_inline;
static uint64_t program_trims_seen; /* the program's malloc_trim calls known at the last cleanup */

/* The part of now above the baseline, which moves up to now: out-of-order snapshots of two
 * boundaries racing on two threads never give a negative figure, and nothing is counted twice. */
static uint64_t take_above(uint64_t *base, uint64_t now)
{
    uint64_t d = now > *base ? now - *base : 0;
    if (now > *base)
        *base = now;
    return d;
}

static void traffic_delta(struct roundtrim_traffic *d, const struct roundtrim_traffic *now)
{
    d->malloc_calls = take_above(&last.traffic.malloc_calls, now->malloc_calls);
    d->free_calls = take_above(&last.traffic.free_calls, now->free_calls);
    d->malloc_bytes = take_above(&last.traffic.malloc_bytes, now->malloc_bytes);
    d->free_bytes = take_above(&last.traffic.free_bytes, now->free_bytes);
}

static bool gc_due(void)
{
    return roundtrim_config()->py_gc && roundtrim_python_loaded();
}

/* The same without a symbol lookup (a failed dlsym allocates): at exit the interpreter, if any,
 * was found long before. */
static bool gc_due_at_exit(void)
{
    return roundtrim_config()->py_gc && roundtrim_python_found();
}

/* How much lower now is than before (0 when it is not). */
static uint64_t below(uint64_t before, uint64_t now)
{
    return before > now ? before - now : 0;
}

static struct roundtrim_policy_state policy;
static uint32_t largest_arena_permille; /* from the latest round's memory */

/* Trims in steps, between round ends (policy/trim_steps.h). */
static struct {
    struct roundtrim_step_base base;   /* where the freed heap is counted from */
    uint64_t count, released, us, cpu; /* since the last round record */
    uint64_t holds, hold_max_us, holds_waited, calls, call_bytes, arenas_left;
} steps;

/* Freed minus handed-out bytes of the heap since the process started (negative while it grows):
 * glibc's large blocks, mappings of their own, go back to the OS when freed and are left out. */
static int64_t net_freed_now(void)
{
    struct roundtrim_traffic t;
    roundtrim_counters_total(&t);
    return (int64_t)(t.free_bytes - t.malloc_bytes) + (int64_t)t.mmapped_net;
}

/* Bytes in live heap blocks now, large mapped ones left out. */
static uint64_t heap_blocks_live_now(void)
{
    struct roundtrim_traffic t;
    roundtrim_counters_total(&t);
    uint64_t live = roundtrim_counters_live(&t), mapped = roundtrim_counters_mmapped_live(&t);
    return live > mapped ? live - mapped : 0;
}

static void policy_settings(struct roundtrim_policy_settings *set)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    set->adaptive = cfg->adaptive;
    set->trim_min_bytes = cfg->trim_min_mib << 20;
    set->trim_min_percent = cfg->trim_min_percent;
    set->device_min_bytes = cfg->cuda_cache_min_mib << 20;
    set->budget_percent = cfg->cleanup_budget;
    set->pause_us = cfg->trim_pause_ms * 1000u;
}

/* A measured part of the round's memory, when the round has one. */
static bool part_known(const struct roundtrim_round_record *r, enum roundtrim_mem_part p)
{
    return r->memory_read && !r->memory.skipped && !r->memory.part_skipped[p];
}

/* What the policy judges by: the round's memory, read before the cleanup. */
static void policy_inputs(const struct roundtrim_round_record *r, bool pressure,
                          struct roundtrim_policy_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->pressure = pressure;
    in->rss = r->rss_before;
    in->heap_free_known = part_known(r, RT_PART_HEAP_FREE);
    in->heap_free = r->memory.value[RT_PART_HEAP_FREE];
    in->largest_arena_permille = r->memory.largest_arena_permille;
    in->trim_possible = roundtrim_allocator_kind() != RT_ALLOC_OTHER;
    in->trim_pauses = roundtrim_allocator_kind() == RT_ALLOC_GLIBC;
    in->trim_holds_possible = in->trim_pauses && roundtrim_trim_holds_possible();
    in->program_trimmed = roundtrim_program_trim_count() != program_trims_seen;
    in->device_known = part_known(r, RT_PART_DEVICE_CACHED);
    in->device_cached = r->memory.value[RT_PART_DEVICE_CACHED];
}

/* Something given back: a MiB at least (a trim that meets no free page still shaves a few). */
#define GAVE_BACK_BYTES (1u << 20)

/* Returns the heap bytes (large mapped blocks and pymalloc's arenas left out) the gc freed: what
 * now lies in the heap for the trim. */
static uint64_t run_gc(struct roundtrim_round_record *r,
                       const struct roundtrim_policy_settings *set,
                       struct roundtrim_policy_inputs *in, struct roundtrim_policy_plan *plan)
{
    uint64_t heap_freed = 0;
    /* The policy reads the interpreter's own collections first: what the program already did
     * since the last cleanup is not done twice, and what they found tells whether cycles are
     * being made. The fixed period collects whatever it will find. */
    const char *unreachable = NULL;
    bool collected = false;
    if (set->adaptive && !in->pressure) {
        collected = roundtrim_python_program_collected(&unreachable);
        in->gc_evidence = roundtrim_python_gc_evidence(&in->gc_collected);
    }
    roundtrim_policy_decide(&policy, set, in, plan);
    if (collected) {
        r->gc_skipped = "program_gc";
    } else if (unreachable) {
        r->gc_skipped = unreachable;
    } else if (!plan->run[RT_CLEAN_GC]) {
        r->gc_skipped = plan->skipped[RT_CLEAN_GC];
    } else {
        uint64_t live = roundtrim_memory_live_now(), heap = heap_blocks_live_now();
        if (!(r->gc_skipped = roundtrim_python_gc(&r->gc_collected, &r->gc_us))) {
            r->gc_ran = true;
            r->actions |= RT_ACT_GC;
            heap_freed = below(heap, heap_blocks_live_now());
            /* Small objects freed leave pymalloc's arenas mapped: counted by their blocks. */
            uint64_t mapped = below(live, roundtrim_memory_live_now()),
                     blocks = heap_freed + roundtrim_python_gc_small_freed();
            r->gc_freed_bytes = mapped > blocks ? mapped : blocks;
            bool paid = roundtrim_policy_gc_paid(set, r->gc_collected, r->gc_freed_bytes, r->gc_us);
            roundtrim_policy_learn(&policy, RT_CLEAN_GC, paid, r->gc_us, 0);
        }
    }
    roundtrim_python_gc_mark(r->gc_ran, r->gc_skipped, r->gc_collected);
    return heap_freed;
}

static bool process_ending(void)
{
    return exit_inline || __atomic_load_n(&exiting, __ATOMIC_ACQUIRE) || roundtrim_py_finalizing();
}

/* A trim in holds of the arenas' locks each under the pause limit. NULL when done; else why the
 * arenas could not be walked (nothing was done). */
static const char *trim_in_holds(struct roundtrim_round_record *r,
                                 const struct roundtrim_policy_settings *set,
                                 const struct roundtrim_policy_plan *plan, uint64_t *released)
{
    uint64_t rss = roundtrim_rss_bytes();
    struct roundtrim_holds_done d;
    const char *why =
        roundtrim_trim_in_holds(&policy, set, plan->trim_budget_us, process_ending, &d);
    if (why)
        return why;
    *released = below(rss, roundtrim_rss_bytes());
    r->trim_us += d.us;
    r->trim_holds += d.holds;
    r->trim_holds_waited += d.waited;
    r->trim_calls += d.calls;
    r->trim_call_bytes += d.call_bytes;
    r->trim_arenas_left += d.arenas_left;
    r->trim_budget_cut = d.cut;
    if (d.hold_max_us > r->trim_hold_max_us)
        r->trim_hold_max_us = d.hold_max_us;
    return NULL;
}

static void run_trim(struct roundtrim_round_record *r, const struct roundtrim_policy_settings *set,
                     const struct roundtrim_policy_inputs *in,
                     const struct roundtrim_policy_plan *plan)
{
    uint64_t released = 0;
    bool held = false; /* done in holds */
    const char *unwalked = NULL;
    r->trim_retry = plan->trim_retry;
    if (plan->run[RT_CLEAN_TRIM] && plan->trim_in_holds)
        held = !(unwalked = trim_in_holds(r, set, plan, &released));
    if (!plan->run[RT_CLEAN_TRIM] || unwalked) {
        /* Left out, or the arenas could not be walked this time: a whole malloc_trim could hold
         * them past the limit, so the trim waits for the next cleanup round, which walks them
         * again. */
        r->trim_skipped = plan->skipped[RT_CLEAN_TRIM] ? plan->skipped[RT_CLEAN_TRIM] : unwalked;
        r->trim_pause_predicted_us = plan->predicted_pause_us;
        if (strcmp(r->trim_skipped, "pause_limit") == 0)
            r->trim_held_back_rounds = policy.pause_held ? policy.pause_held : 1;
    } else {
        unsigned done = RT_ACT_TRIM;
        if (!held) {
            uint64_t rss = roundtrim_rss_bytes();
            done = roundtrim_allocator_release(&r->trim_us);
            released = below(rss, roundtrim_rss_bytes());
        } else {
            r->trim_pause_predicted_us = plan->predicted_pause_us;
        }
        r->actions |= done;
        r->trim_released_bytes = released;
        if (!done)
            r->trim_skipped = "no_release"; /* an allocator with none (said once on stderr) */
        if (!roundtrim_allocator_counts_skipped())
            roundtrim_trim_step_rebase(&steps.base, net_freed_now());
        uint64_t measure = in->heap_free_known ? in->heap_free : 0;
        bool gave = r->trim_released_bytes >= GAVE_BACK_BYTES;
        if (held)
            roundtrim_policy_learn_trim_in_holds(&policy, gave, r->trim_us, measure);
        else if (r->actions & (RT_ACT_TRIM | RT_ACT_PURGE))
            roundtrim_policy_learn(&policy, RT_CLEAN_TRIM, gave, r->trim_us, measure);
    }
    program_trims_seen = roundtrim_program_trim_count(); /* ours included */
}

static void run_device(struct roundtrim_round_record *r, const struct roundtrim_policy_plan *plan)
{
    if (!plan->run[RT_CLEAN_DEVICE]) {
        r->torch_empty_cache_skipped = r->cuda_pool_trim_skipped = plan->skipped[RT_CLEAN_DEVICE];
        if (roundtrim_python_cupy_seen())
            r->cupy_free_blocks_skipped = plan->skipped[RT_CLEAN_DEVICE];
        return;
    }
    /* Its cost is CPU, the worker's and the helper's: the pool trim's synchronize may wait
     * long for the program's queued GPU work without spending any. */
    uint64_t cpu0 = roundtrim_thread_cpu_us() + roundtrim_py_jobs_cpu_us();
    uint64_t device = roundtrim_memory_device_now();
    const char *why = roundtrim_python_torch_empty_cache(&r->torch_empty_cache_us);
    if (!why) {
        r->actions |= RT_ACT_TORCH_EMPTY_CACHE;
        r->torch_released_bytes = below(device, roundtrim_memory_device_now());
    } else
        r->torch_empty_cache_skipped = roundtrim_python_torch_news(why);
    device = roundtrim_memory_device_now();
    why = roundtrim_python_cupy_free_blocks(&r->cupy_free_blocks_us);
    if (!why) {
        r->actions |= RT_ACT_CUPY_FREE_BLOCKS;
        r->cupy_released_bytes = below(device, roundtrim_memory_device_now());
    } else
        r->cupy_free_blocks_skipped = roundtrim_python_cupy_news(why);
    why = roundtrim_cuda_pool_trim(&r->cuda_pool_trim_bytes);
    if (!why)
        r->actions |= RT_ACT_CUDA_POOL_TRIM;
    else
        r->cuda_pool_trim_skipped = roundtrim_skip_news(why);
    if (r->actions & (RT_ACT_TORCH_EMPTY_CACHE | RT_ACT_CUPY_FREE_BLOCKS | RT_ACT_CUDA_POOL_TRIM))
        roundtrim_policy_learn(&policy, RT_CLEAN_DEVICE,
                               r->torch_released_bytes + r->cupy_released_bytes +
                                       r->cuda_pool_trim_bytes >=
                                   GAVE_BACK_BYTES,
                               roundtrim_thread_cpu_us() + roundtrim_py_jobs_cpu_us() - cpu0, 0);
}

/* gc first so that what it frees goes back to the OS in the same cleanup, then the heap, then
 * the device caches. Each runs when the policy finds it worth it (always under pressure); the
 * CPU it all took, the helper thread's Python jobs included, is charged to the budget. */
static void cleanup(struct roundtrim_round_record *r, bool pressure)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    uint64_t t0 = roundtrim_now_us();
    uint64_t cpu0 = roundtrim_thread_cpu_us() + roundtrim_py_jobs_cpu_us();
    struct roundtrim_policy_settings set;
    struct roundtrim_policy_inputs in;
    struct roundtrim_policy_plan plan;
    policy_settings(&set);
    policy_inputs(r, pressure, &in);
    if (gc_due()) {
        uint64_t heap_freed = run_gc(r, &set, &in, &plan);
        roundtrim_policy_after_gc(&policy, &set, &in, &plan, heap_freed);
    } else {
        roundtrim_policy_decide(&policy, &set, &in, &plan);
    }
    run_trim(r, &set, &in, &plan);
    if (cfg->cuda_empty_cache)
        run_device(r, &plan);
    r->cleanup_us = roundtrim_now_us() - t0;
    r->cleanup_cpu_us = roundtrim_thread_cpu_us() + roundtrim_py_jobs_cpu_us() - cpu0;
    roundtrim_policy_charge(&policy, r->cleanup_cpu_us);
    if (r->actions)
        cleanups++; /* a cleanup round whose every step was left out ran no cleanup */
}

/* The trim steps taken since the previous record belong to this round: its CPU, and what they
 * returned. */
static void steps_into_record(struct roundtrim_round_record *r)
{
    r->trim_steps = steps.count;
    r->trim_steps_released_bytes = steps.released;
    r->trim_steps_us = steps.us;
    r->cleanup_cpu_us += steps.cpu;
    r->trim_holds += steps.holds;
    r->trim_holds_waited += steps.holds_waited;
    r->trim_calls += steps.calls;
    r->trim_call_bytes += steps.call_bytes;
    r->trim_arenas_left += steps.arenas_left;
    if (steps.hold_max_us > r->trim_hold_max_us)
        r->trim_hold_max_us = steps.hold_max_us;
    steps.count = steps.released = steps.us = steps.cpu = 0;
    steps.holds = steps.hold_max_us = steps.holds_waited = steps.calls = steps.call_bytes = 0;
    steps.arenas_left = 0;
}

/* A trim step, between round ends, when the policy finds one due (policy/trim_steps.h): the
 * worker's samples (every 100 ms once rounds began) read the heap freed since the last trim
 * from the counters (no walk, no lock). Round lock held. */
static void trim_step_maybe(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    struct roundtrim_policy_settings set;
    struct roundtrim_step_inputs in = {
        .cleaning = cfg->gc_rounds > 0,
        .glibc_counted =
            roundtrim_allocator_kind() == RT_ALLOC_GLIBC && !roundtrim_allocator_counts_skipped(),
        .program_trimmed = roundtrim_program_trim_count() != program_trims_seen,
        .largest_arena_permille = largest_arena_permille,
    };
    struct roundtrim_step_plan plan;
    policy_settings(&set);
    in.net_freed = net_freed_now();
    in.holds_possible = in.glibc_counted && roundtrim_trim_holds_possible();
    roundtrim_trim_step_decide(&policy, &set, &steps.base, &in, &plan);
    if (plan.kind == RT_STEP_NONE)
        return;
    uint64_t rss = roundtrim_rss_bytes(), cpu = roundtrim_thread_cpu_us(), us = 0;
    if (plan.kind == RT_STEP_IN_HOLDS) {
        struct roundtrim_holds_done d;
        if (roundtrim_trim_in_holds(&policy, &set, 0, process_ending, &d))
            return;
        us = d.us;
        steps.holds += d.holds;
        steps.calls += d.calls;
        steps.call_bytes += d.call_bytes;
        steps.arenas_left += d.arenas_left;
        steps.holds_waited += d.waited;
        if (d.hold_max_us > steps.hold_max_us)
            steps.hold_max_us = d.hold_max_us;
    } else if (!roundtrim_allocator_release(&us)) {
        return;
    }
    uint64_t released = below(rss, roundtrim_rss_bytes());
    uint64_t spent = roundtrim_thread_cpu_us() - cpu;
    roundtrim_trim_step_done(&policy, &steps.base, &plan, released, us, spent, net_freed_now());
    steps.count++;
    steps.released += released;
    steps.us += us;
    steps.cpu += spent;
}

/* A due cleanup once the process is ending: nothing runs (the libraries it would call are being
 * finalized, and exit has a time budget), and the record says so. */
static void cleanup_skipped_at_exit(struct roundtrim_round_record *r)
{
    r->cleanup_skipped = "exiting";
    if (gc_due_at_exit())
        r->gc_skipped = "exiting";
}

/* Counters come from the boundary's own snapshot; the rest is read now. */
static void measure(struct roundtrim_round_record *r, const struct roundtrim_boundary_snap *s)
{
    traffic_delta(&r->traffic, &s->traffic);
    r->pid = (int)getpid();
    r->ts = s->wall_s;
    r->allocator = roundtrim_allocator_name();
    r->counts_skipped = roundtrim_allocator_counts_skipped();
    r->rss_before = roundtrim_rss_bytes();
    r->rss_peak = roundtrim_rss_peak_round(r->rss_before, roundtrim_config()->peak_reset, true);
    if (!r->counts_skipped) {
        r->heap_live_known = true;
        r->heap_live = roundtrim_counters_live(&s->traffic);
    } else {
        r->heap_live_skipped = r->counts_skipped;
    }
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(roundtrim_config()->cgroup_dir, &lim);
    r->mem_limit = lim.limit;
    r->mem_limit_from_cgroup = lim.from_cgroup;
    r->mem_headroom = lim.headroom;
    r->mem_headroom_of = lim.headroom_of;
    if (lim.cgroup_usage_known) {
        r->cgroup_known = true;
        r->cgroup_usage = lim.cgroup_usage;
        r->cgroup_limit = lim.cgroup_limit;
    }
    roundtrim_cuda_round_fill(&r->cuda, &s->cuda, &last.cuda, !exit_inline);
    if (s->cuda.seen)
        last.cuda = s->cuda;
    /* Read once the program has begun to exit, the memory would be the exit's, not the
     * round's: the interpreter's finalization frees most of it (and begins before exit()). */
    if (process_ending())
        r->memory.skipped = "exiting";
    else {
        uint64_t t0 = roundtrim_now_us();
        roundtrim_memory_parts_read(&r->memory, &s->traffic, &r->cuda);
        r->memory.read_us = roundtrim_now_us() - t0;
        if (process_ending()) { /* it began while the parts were read */
            memset(&r->memory, 0, sizeof r->memory);
            r->memory.skipped = "exiting";
            return;
        }
        r->memory_read = true;
        if (r->memory.largest_arena_permille)
            largest_arena_permille = r->memory.largest_arena_permille;
    }
}

static void finish(struct roundtrim_round_record *r)
{
    r->rss_after = roundtrim_rss_bytes();
    roundtrim_rss_peak_next(r->rss_after, roundtrim_config()->peak_reset);
    char line[4096];
    size_t n = roundtrim_round_record_format(r, line, sizeof line);
    /* A record the log was asked for but could not take is a round unrecorded. */
    if (n > 0 && !roundtrim_log_write(line, n) && roundtrim_config()->log_path)
        __atomic_add_fetch(&rounds_unwritten, 1, __ATOMIC_RELEASE);
    roundtrim_diagnose_round(r);
    roundtrim_metrics_file_update(r, r->round, cleanups, roundtrim_diagnose_latest());
}

/* The time from the previous boundary (the first: from the library's start) to this one, on the
 * monotonic clock. */
static uint64_t prev_boundary_us;

void roundtrim_round_clock_start(void)
{
    prev_boundary_us = roundtrim_now_us();
}

static uint64_t round_time_us(uint64_t mono_us)
{
    uint64_t d = prev_boundary_us && mono_us > prev_boundary_us ? mono_us - prev_boundary_us : 0;
    if (mono_us > prev_boundary_us)
        prev_boundary_us = mono_us;
    return d;
}

/* Whether one of the rounds round_no+1 .. last_round is a cleanup round. */
static bool cleans_any(uint64_t first, uint64_t last_round)
{
    for (uint64_t n = first; n <= last_round; n++)
        if (roundtrim_round_cleans(roundtrim_config(), n))
            return true;
    return false;
}

/* Records one boundary (round_lock held). */
/* Once the latest diagnosis says the live memory leaks, the holder search walks on; a walk
 * that ended is recorded. Not before: any Python job of a round shifts when the program's
 * threads run, and frees moved across a boundary would cost an undecided verdict its
 * persistence. */
static void holders_step(uint64_t round)
{
    /* Made in the program's first round, whose memory no diagnosis compares. */
    static bool prepared;
    if (roundtrim_config()->holders && !prepared && round <= 1)
        prepared = roundtrim_python_holders_prepare();
    const struct roundtrim_diagnosis *d = roundtrim_diagnose_latest();
    if (!roundtrim_config()->holders || !d || d->skipped || d->cause != RT_CAUSE_LEAK)
        return;
    struct roundtrim_holders_walk walk;
    if (roundtrim_python_holders_step(round, &walk))
        roundtrim_holders_record(round, &walk);
}

static void run_round(const struct roundtrim_boundary_snap *s, uint64_t merged)
{
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    r.round = round_no + merged + 1;
    r.merged_rounds = merged;
    r.source = roundtrim_source_name(s->src);
    r.hook = s->src == ROUNDTRIM_SRC_PYTHON ? s->label : NULL;
    measure(&r, s);
    r.round_us = round_time_us(s->mono_us);
    if (roundtrim_config()->adaptive) {
        struct roundtrim_policy_settings set;
        policy_settings(&set);
        roundtrim_policy_round_time(&policy, &set, r.round_us);
    }
    /* Said by the first round marked otherwise than by that signal (a round by signal recorded
     * now was marked before), or else by the exit record without a line on stderr: programs
     * commonly restore the default action while they finalize. */
    if (s->src != ROUNDTRIM_SRC_SIGNAL &&
        (r.signal_rounds_off = roundtrim_signal_rounds_off_take()))
        roundtrim_signal_rounds_off_warn(r.signal_rounds_off);
    if (cleans_any(round_no + 1, r.round)) {
        if (__atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
            cleanup_skipped_at_exit(&r);
        else
            cleanup(&r, false);
    }
    steps_into_record(&r);
    roundtrim_python_holders_cost_take(&r.holders_gil_us, &r.holders_steps);
    finish(&r);
    /* dladdr takes the loader's lock, which an _exit from a signal handler may interrupt. */
    if (!(exit_inline && exit_async))
        roundtrim_sites_record(r.round - merged, r.round, s->wall_s);
    if (!process_ending()) {
        roundtrim_python_objects_attach();
        holders_step(r.round);
    }
    __atomic_store_n(&round_no, r.round, __ATOMIC_RELEASE);
    last_round_us = roundtrim_now_us();
}

/* Takes and records one queued boundary (round_lock held); false when none was queued. */
static bool run_one_locked(void)
{
    struct roundtrim_boundary_snap s;
    uint64_t merged;
    __atomic_store_n(&in_round, true, __ATOMIC_RELEASE);
    bool took = roundtrim_boundary_take(&s, &merged);
    if (took)
        run_round(&s, merged);
    __atomic_store_n(&in_round, false, __ATOMIC_RELEASE);
    return took;
}

void roundtrim_round_run_pending(void)
{
    for (;;) {
        pthread_mutex_lock(&round_lock);
        bool took = run_one_locked();
        pthread_mutex_unlock(&round_lock);
        if (!took)
            return;
    }
}

/* Timer rounds and pressure samples: when a variable asked for them, else once the process has
 * seen a boundary. A worker started with the interpreter stays asleep in a Python process that
 * never ends a round (pip, a launcher): no sample, no record. */
static bool periodic_wanted(const struct roundtrim_config *cfg)
{
    if (cfg->interval_s == 0 && cfg->pressure_warn == 0 && cfg->pressure_clean == 0)
        return false;
    return roundtrim_config_wants_sampling(cfg) || roundtrim_boundaries_seen() > 0;
}

uint64_t roundtrim_round_sample_period_ms(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    uint64_t ms = 0;
    if (periodic_wanted(cfg))
        ms = cfg->sample_ms;
    if (!cfg->peak_reset && roundtrim_rss_peak_sampling() &&
        (ms == 0 || ms > ROUNDTRIM_PEAK_SAMPLE_MS))
        ms = ROUNDTRIM_PEAK_SAMPLE_MS;
    return ms;
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
    cleanup(&r, true);
    r.rss_after = roundtrim_rss_bytes();
    pressure_record("clean", lim, &r);
    pthread_mutex_unlock(&round_lock);
}

void roundtrim_round_sample(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (__atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
        return;
    if (roundtrim_rss_peak_sampling())
        roundtrim_rss_peak_sample();
    if (roundtrim_boundaries_seen() > 0 && pthread_mutex_trylock(&round_lock) == 0) {
        if (!__atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
            trim_step_maybe();
        pthread_mutex_unlock(&round_lock);
    }
    if (!periodic_wanted(cfg))
        return;
    uint64_t now = roundtrim_now_us();
    if (last_round_us == 0)
        last_round_us = now; /* the first timer round is one interval after sampling starts */
    if (cfg->interval_s > 0 && now - last_round_us >= cfg->interval_s * 1000000u) {
        last_round_us = now;
        roundtrim_boundary(ROUNDTRIM_SRC_TIMER);
        roundtrim_round_run_pending();
    }
    if (cfg->pressure_warn == 0 && cfg->pressure_clean == 0)
        return;
    if (last_pressure_us != 0 && now - last_pressure_us < cfg->sample_ms * 1000u)
        return;
    last_pressure_us = now;
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(cfg->cgroup_dir, &lim);
    unsigned act = roundtrim_pressure_update(&pressure, cfg, lim.used, lim.limit, now / 1000);
    if (act & RT_PRESSURE_WARN)
        pressure_record("warn", &lim, NULL);
    if (act & RT_PRESSURE_CLEAN)
        pressure_cleanup(&lim);
}

static uint64_t rounds_recorded(void)
{
    return __atomic_load_n(&round_no, __ATOMIC_ACQUIRE);
}

/* Boundaries seen before exit get their records within the budget: the worker finishes them
 * (woken, and waited for), or, when it does not run (a signal to a native program that never
 * allocated again), the exiting thread records them itself; cleanups are skipped either way. */
static void drain_before_exit(uint64_t deadline_us)
{
    while (roundtrim_now_us() < deadline_us) {
        if (!roundtrim_boundary_pending() && !__atomic_load_n(&in_round, __ATOMIC_ACQUIRE))
            return; /* all recorded, or only boundaries merged into none (counted below) */
        if (roundtrim_worker_running() && !roundtrim_worker_is_self()) {
            roundtrim_worker_wake();
            roundtrim_sleep_us(2000);
        } else if (pthread_mutex_trylock(&round_lock) == 0) {
            exit_inline = exit_async;
            bool took = run_one_locked();
            exit_inline = false;
            pthread_mutex_unlock(&round_lock);
            if (!took)
                roundtrim_sleep_us(
                    1000); /* a producer on another thread is still filling its slot */
        } else {
            roundtrim_sleep_us(1000);
        }
    }
}

/* Takes round_lock within the budget; false when a round still runs at the deadline. */
static bool lock_until(uint64_t deadline_us)
{
    while (pthread_mutex_trylock(&round_lock) != 0) {
        if (roundtrim_now_us() >= deadline_us)
            return false;
        roundtrim_sleep_us(1000);
    }
    return true;
}

/* The last record of a program image: "exit", or "exec" when another program replaces it. */
static void summary_record(const char *event, bool locked)
{
    /* Without the lock, a first record may be opening the log right now: write only into a log
     * already open. */
    if (!roundtrim_log_started() && !(locked && roundtrim_boundaries_seen() > 0))
        return;
    /* The rounds since the last diagnosis get theirs (not at an exec: the program goes on
     * when it fails, and a new one does not inherit the window). */
    if (locked && strcmp(event, "exit") == 0)
        roundtrim_diagnose_exit();
    uint64_t seen = roundtrim_boundaries_seen();
    uint64_t recorded = rounds_recorded() - __atomic_load_n(&rounds_unwritten, __ATOMIC_ACQUIRE);
    struct roundtrim_traffic total;
    roundtrim_counters_total(&total);
    uint64_t rss = roundtrim_rss_bytes();
    char line[8192];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, event, getpid(), roundtrim_wall_seconds());
    roundtrim_json_u64(&j, "rounds", recorded);
    roundtrim_json_u64(&j, "rounds_unrecorded", seen > recorded ? seen - recorded : 0);
    roundtrim_json_u64(&j, "cleanups", cleanups);
    roundtrim_json_traffic(&j, &total, roundtrim_allocator_counts_skipped());
    roundtrim_json_u64(&j, "rss", rss);
    roundtrim_json_u64(&j, "rss_peak",
                       roundtrim_rss_peak_round(rss, roundtrim_config()->peak_reset, false));
    roundtrim_py_hooks_exit_json(&j);
    const char *signal_off = roundtrim_signal_rounds_off_take();
    if (signal_off)
        roundtrim_json_str(&j, "signal_rounds_off", signal_off);
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}

void roundtrim_round_at_exit(void)
{
    if (__atomic_exchange_n(&exit_begun, true, __ATOMIC_ACQ_REL))
        return;
    uint64_t deadline = roundtrim_now_us() + roundtrim_config()->exit_budget_ms * 1000u;
    __atomic_store_n(&exiting, true, __ATOMIC_RELEASE);
    roundtrim_python_exiting(); /* a gc waiting for the GIL gives up at once */
    drain_before_exit(deadline);
    /* The lock is kept: no round may touch libraries that are being finalized from here on. A
     * round still running past the budget is counted as unrecorded and may still land later. */
    summary_record("exit", lock_until(deadline));
}

void roundtrim_round_at_exec(void)
{
    if (__atomic_exchange_n(&exit_begun, true, __ATOMIC_ACQ_REL))
        return; /* exec from an exit handler: the exit record is written */
    uint64_t deadline = roundtrim_now_us() + roundtrim_config()->exit_budget_ms * 1000u;
    /* exec is async-signal-safe and may follow a fork in a threaded parent: rounds recorded on
     * this thread read nothing that takes the allocator's or the driver's locks. The
     * interpreter is left as it is, since a failed exec returns to it. */
    exit_async = true;
    __atomic_store_n(&exiting, true, __ATOMIC_RELEASE);
    roundtrim_python_exec(true); /* the thread calling exec may hold the GIL a gc waits for */
    drain_before_exit(deadline);
    bool locked = lock_until(deadline);
    summary_record("exec", locked);
    /* A failed exec carries on: rounds and cleanups resume, and its exit writes its own record. */
    exit_async = false;
    __atomic_store_n(&exiting, false, __ATOMIC_RELEASE);
    roundtrim_python_exec(false);
    if (locked)
        pthread_mutex_unlock(&round_lock);
    __atomic_store_n(&exit_begun, false, __ATOMIC_RELEASE);
}

void roundtrim_round_at_fast_exit(void)
{
    exit_async = true;
    roundtrim_round_at_exit();
}

bool roundtrim_round_exit_wanted(void)
{
    return roundtrim_log_started() || roundtrim_boundaries_seen() > 0;
}

void roundtrim_round_fork_child(void)
{
    pthread_mutex_init(&round_lock, NULL);
    roundtrim_boundary_fork_child();
    roundtrim_rss_peak_fork_child();
    roundtrim_diagnose_fork_child();
    memset(&last, 0, sizeof last);
    memset(&pressure, 0, sizeof pressure);
    memset(&policy, 0, sizeof policy);
    memset(&steps, 0, sizeof steps);
    prev_boundary_us = roundtrim_now_us();
    exiting = exit_begun = in_round = exit_async = false;
    round_no = cleanups = rounds_unwritten = 0;
    last_round_us = roundtrim_now_us();
    last_pressure_us = 0;
}
