#include "runtime/rounds/cleanup.h"

#include <string.h>

#include "policy/cleanup_policy.h"
#include "policy/cleanup_actions.h"
#include "policy/round_record.h"
#include "policy/trim_steps.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/track.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/cupy_pools.h"
#include "runtime/python/gil.h"
#include "runtime/python/program_gc.h"
#include "runtime/rounds/memory_parts.h"
#include "runtime/rounds/round_sync.h"
#include "runtime/rounds/trim_holds.h"

static uint64_t cleanups;           /* cleanup rounds that ran an action */
static uint64_t program_trims_seen; /* the program's malloc_trim calls known at the last cleanup */

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
    struct roundtrim_holds_done holds; /* of the steps in holds, since then (us and cut unused) */
} steps;

/* A trim in holds' figures added to a sum of them: the holds, the waits, the release calls and
 * their bytes, the arenas left alone; the longest hold. */
static void add_holds(struct roundtrim_holds_done *sum, const struct roundtrim_holds_done *d)
{
    sum->holds += d->holds;
    sum->waited += d->waited;
    sum->calls += d->calls;
    sum->call_bytes += d->call_bytes;
    sum->arenas_left += d->arenas_left;
    if (d->hold_max_us > sum->hold_max_us)
        sum->hold_max_us = d->hold_max_us;
}

/* The same figures added to the round record's. */
static void holds_into_record(struct roundtrim_round_record *r,
                              const struct roundtrim_holds_done *d)
{
    struct roundtrim_holds_done sum = {
        .holds = r->trim_holds,
        .waited = r->trim_holds_waited,
        .calls = r->trim_calls,
        .call_bytes = r->trim_call_bytes,
        .arenas_left = r->trim_arenas_left,
        .hold_max_us = r->trim_hold_max_us,
    };
    add_holds(&sum, d);
    r->trim_holds = sum.holds;
    r->trim_holds_waited = sum.waited;
    r->trim_calls = sum.calls;
    r->trim_call_bytes = sum.call_bytes;
    r->trim_arenas_left = sum.arenas_left;
    r->trim_hold_max_us = sum.hold_max_us;
}

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
    enum roundtrim_skip unreachable = RT_SKIP_NONE;
    bool collected = false;
    if (set->adaptive && !in->pressure) {
        collected = roundtrim_python_program_collected(&unreachable);
        in->gc_evidence = roundtrim_python_gc_evidence(&in->gc_collected);
    }
    roundtrim_policy_decide(&policy, set, in, plan);
    if (collected) {
        r->gc_skipped = RT_SKIP_program_gc;
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

/* A trim in holds of the arenas' locks each under the pause limit. RT_SKIP_NONE when done; else
 * why the arenas could not be walked (nothing was done). */
static enum roundtrim_skip trim_in_holds(struct roundtrim_round_record *r,
                                         const struct roundtrim_policy_settings *set,
                                         const struct roundtrim_policy_plan *plan,
                                         uint64_t *released)
{
    uint64_t rss = roundtrim_rss_bytes();
    struct roundtrim_holds_done d;
    enum roundtrim_skip why = roundtrim_trim_in_holds(&policy, set, plan->trim_budget_us,
                                                      roundtrim_round_process_ending, &d);
    if (why)
        return why;
    *released = below(rss, roundtrim_rss_bytes());
    r->trim_us += d.us;
    r->trim_budget_cut = d.cut;
    holds_into_record(r, &d);
    return RT_SKIP_NONE;
}

static void run_trim(struct roundtrim_round_record *r, const struct roundtrim_policy_settings *set,
                     const struct roundtrim_policy_inputs *in,
                     const struct roundtrim_policy_plan *plan)
{
    uint64_t released = 0;
    bool held = false; /* done in holds */
    enum roundtrim_skip unwalked = RT_SKIP_NONE;
    r->trim_retry = plan->trim_retry;
    if (plan->run[RT_CLEAN_TRIM] && plan->trim_in_holds)
        held = !(unwalked = trim_in_holds(r, set, plan, &released));
    if (!plan->run[RT_CLEAN_TRIM] || unwalked) {
        /* Left out, or the arenas could not be walked this time: a whole malloc_trim could hold
         * them past the limit, so the trim waits for the next cleanup round, which walks them
         * again. */
        r->trim_skipped = plan->skipped[RT_CLEAN_TRIM] ? plan->skipped[RT_CLEAN_TRIM] : unwalked;
        r->trim_pause_predicted_us = plan->predicted_pause_us;
        if (r->trim_skipped == RT_SKIP_pause_limit)
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
            r->trim_skipped = RT_SKIP_no_release; /* an allocator with none (said once on stderr) */
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
    enum roundtrim_skip why = roundtrim_python_torch_empty_cache(&r->torch_empty_cache_us);
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
void roundtrim_cleanup_run(struct roundtrim_round_record *r, bool pressure)
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
void roundtrim_cleanup_steps_into_record(struct roundtrim_round_record *r)
{
    r->trim_steps = steps.count;
    r->trim_steps_released_bytes = steps.released;
    r->trim_steps_us = steps.us;
    r->cleanup_cpu_us += steps.cpu;
    holds_into_record(r, &steps.holds);
    steps.count = steps.released = steps.us = steps.cpu = 0;
    steps.holds = (struct roundtrim_holds_done){0};
}

/* A trim step, between round ends, when the policy finds one due (policy/trim_steps.h): the
 * worker's samples (every 100 ms once rounds began) read the heap freed since the last trim
 * from the counters (no walk, no lock). Round lock held. */
void roundtrim_cleanup_trim_step_maybe(void)
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
        if (roundtrim_trim_in_holds(&policy, &set, 0, roundtrim_round_process_ending, &d))
            return;
        us = d.us;
        add_holds(&steps.holds, &d);
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
void roundtrim_cleanup_skipped_at_exit(struct roundtrim_round_record *r)
{
    r->cleanup_skipped = RT_SKIP_exiting;
    if (gc_due_at_exit())
        r->gc_skipped = RT_SKIP_exiting;
}

void roundtrim_cleanup_round_time(uint64_t round_us)
{
    if (!roundtrim_config()->adaptive)
        return;
    struct roundtrim_policy_settings set;
    policy_settings(&set);
    roundtrim_policy_round_time(&policy, &set, round_us);
}

void roundtrim_cleanup_memory_read(const struct roundtrim_round_record *r)
{
    if (r->memory_read && r->memory.largest_arena_permille)
        largest_arena_permille = r->memory.largest_arena_permille;
}

uint64_t roundtrim_cleanup_count(void)
{
    return cleanups;
}

void roundtrim_cleanup_fork_child(void)
{
    memset(&policy, 0, sizeof policy);
    memset(&steps, 0, sizeof steps);
    cleanups = 0;
}
