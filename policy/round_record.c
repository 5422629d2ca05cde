#include "policy/round_record.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Text as it is: punctuation, numbers. */
static void put(struct roundtrim_json *j, const char *text)
{
    roundtrim_text_bytes(&j->text, text, strlen(text));
}

static void key(struct roundtrim_json *j, const char *k)
{
    if (j->need_comma)
        put(j, ",");
    j->need_comma = true;
    if (k) {
        roundtrim_text_json_string(&j->text, k);
        put(j, ":");
    }
}

void roundtrim_json_begin(struct roundtrim_json *j, char *buf, size_t cap)
{
    roundtrim_text_begin(&j->text, buf, cap);
    j->need_comma = false;
    put(j, "{");
}

void roundtrim_json_u64(struct roundtrim_json *j, const char *k, uint64_t v)
{
    key(j, k);
    roundtrim_text_u64(&j->text, v);
}

void roundtrim_json_i64(struct roundtrim_json *j, const char *k, int64_t v)
{
    key(j, k);
    roundtrim_text_i64(&j->text, v);
}

void roundtrim_json_str(struct roundtrim_json *j, const char *k, const char *v)
{
    key(j, k);
    if (v)
        roundtrim_text_json_string(&j->text, v);
    else
        put(j, "null");
}

void roundtrim_json_bool(struct roundtrim_json *j, const char *k, bool v)
{
    key(j, k);
    put(j, v ? "true" : "false");
}

void roundtrim_json_ts(struct roundtrim_json *j, const char *k, double seconds)
{
    key(j, k);
    roundtrim_text_printf(&j->text, "%.3f", seconds);
}

void roundtrim_json_percent(struct roundtrim_json *j, const char *k, uint64_t part, uint64_t whole)
{
    key(j, k);
    if (whole == 0) {
        put(j, "null");
        return;
    }
    /* Two decimals, rounded, without floating point: 12.34 */
    uint64_t hundredths = (part * 10000u + whole / 2) / whole;
    roundtrim_text_printf(&j->text, "%" PRIu64 ".%02" PRIu64, hundredths / 100, hundredths % 100);
}

void roundtrim_json_object_begin(struct roundtrim_json *j, const char *k)
{
    key(j, k);
    put(j, "{");
    j->need_comma = false;
}

void roundtrim_json_object_end(struct roundtrim_json *j)
{
    put(j, "}");
    j->need_comma = true;
}

void roundtrim_json_array_begin(struct roundtrim_json *j, const char *k)
{
    key(j, k);
    put(j, "[");
    j->need_comma = false;
}

void roundtrim_json_array_str(struct roundtrim_json *j, const char *v)
{
    key(j, NULL);
    roundtrim_text_json_string(&j->text, v);
}

void roundtrim_json_raw(struct roundtrim_json *j, const char *text, size_t len)
{
    key(j, NULL);
    roundtrim_text_bytes(&j->text, text, len);
}

void roundtrim_json_array_end(struct roundtrim_json *j)
{
    put(j, "]");
    j->need_comma = true;
}

size_t roundtrim_json_end(struct roundtrim_json *j)
{
    put(j, "}\n");
    return roundtrim_text_end(&j->text);
}

static const struct {
    enum roundtrim_action action;
    const char *name;
} action_names[] = {
    {RT_ACT_GC, "gc"},
    {RT_ACT_TRIM, "trim"},
    {RT_ACT_PURGE, "purge"},
    {RT_ACT_TORCH_EMPTY_CACHE, "torch_empty_cache"},
    {RT_ACT_CUPY_FREE_BLOCKS, "cupy_free_blocks"},
    {RT_ACT_CUDA_POOL_TRIM, "cuda_pool_trim"},
};

const char *roundtrim_action_name(enum roundtrim_action a)
{
    for (size_t i = 0; i < sizeof action_names / sizeof action_names[0]; i++)
        if (action_names[i].action == a)
            return action_names[i].name;
    return "unknown";
}

void roundtrim_json_event_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                int pid, double ts)
{
    roundtrim_json_begin(j, buf, cap);
    roundtrim_json_str(j, "event", event);
    roundtrim_json_i64(j, "pid", pid);
    roundtrim_json_ts(j, "ts", ts);
}

void roundtrim_json_actions(struct roundtrim_json *j, const char *k, unsigned actions)
{
    roundtrim_json_array_begin(j, k);
    /* in the order the cleanup runs them */
    for (size_t i = 0; i < sizeof action_names / sizeof action_names[0]; i++)
        if (actions & action_names[i].action)
            roundtrim_json_array_str(j, action_names[i].name);
    roundtrim_json_array_end(j);
}

void roundtrim_json_traffic(struct roundtrim_json *j, const struct roundtrim_traffic *t,
                            const char *skipped)
{
    static const char *const names[] = {"malloc_calls", "free_calls", "malloc_bytes", "free_bytes"};
    const uint64_t values[] = {t->malloc_calls, t->free_calls, t->malloc_bytes, t->free_bytes};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (skipped)
            roundtrim_json_str(j, names[i], NULL);
        else
            roundtrim_json_u64(j, names[i], values[i]);
    }
    if (skipped)
        roundtrim_json_str(j, "counts_skipped", skipped);
}

static void format_cuda(struct roundtrim_json *j, const struct roundtrim_cuda_round *c)
{
    roundtrim_json_u64(j, "cuda_alloc_calls", c->alloc_calls);
    roundtrim_json_u64(j, "cuda_alloc_bytes", c->alloc_bytes);
    roundtrim_json_u64(j, "cuda_free_calls", c->free_calls);
    roundtrim_json_u64(j, "cuda_free_bytes", c->free_bytes);
    roundtrim_json_u64(j, "cuda_live_bytes", c->live_bytes);
    roundtrim_json_u64(j, "cuda_peak_bytes", c->peak_bytes);
    if (c->have_mem_info) {
        roundtrim_json_u64(j, "cuda_free_mem", c->free_mem);
        roundtrim_json_u64(j, "cuda_total_mem", c->total_mem);
    } else if (c->mem_info_skipped) {
        roundtrim_json_str(j, "cuda_mem_info_skipped", c->mem_info_skipped);
    }
    if (c->host_alloc_calls || c->host_free_calls || c->host_live_bytes) {
        roundtrim_json_u64(j, "cuda_host_alloc_calls", c->host_alloc_calls);
        roundtrim_json_u64(j, "cuda_host_alloc_bytes", c->host_alloc_bytes);
        roundtrim_json_u64(j, "cuda_host_free_calls", c->host_free_calls);
        roundtrim_json_u64(j, "cuda_host_free_bytes", c->host_free_bytes);
        roundtrim_json_u64(j, "cuda_host_live_bytes", c->host_live_bytes);
    }
}

static const char *const part_names[RT_PART_COUNT] = {"heap_live",   "heap_free",    "python",
                                                      "other_anon",  "file",         "shmem",
                                                      "device_live", "device_cached"};

const char *roundtrim_mem_part_name(enum roundtrim_mem_part p)
{
    return (unsigned)p < RT_PART_COUNT ? part_names[p] : "unknown";
}

/* "memory":{"rss":..,"heap_live":..,...,"python":null,"python_skipped":"no_python",...} */
static void format_memory(struct roundtrim_json *j, const struct roundtrim_memory_parts *m)
{
    if (m->skipped) {
        roundtrim_json_str(j, "memory", NULL);
        roundtrim_json_str(j, "memory_skipped", m->skipped);
        return;
    }
    roundtrim_json_object_begin(j, "memory");
    roundtrim_json_u64(j, "rss", m->rss);
    for (int p = 0; p < RT_PART_COUNT; p++) {
        if (!m->part_skipped[p]) {
            roundtrim_json_u64(j, part_names[p], m->value[p]);
            continue;
        }
        char k[40];
        snprintf(k, sizeof k, "%s_skipped", part_names[p]);
        roundtrim_json_str(j, part_names[p], NULL);
        roundtrim_json_str(j, k, m->part_skipped[p]);
    }
    roundtrim_json_u64(j, "over_rss", m->over_rss);
    if (m->heap_uncounted)
        roundtrim_json_u64(j, "heap_uncounted", m->heap_uncounted);
    roundtrim_json_u64(j, "read_us", m->read_us);
    roundtrim_json_object_end(j);
}

size_t roundtrim_round_record_format(const struct roundtrim_round_record *r, char *buf, size_t cap)
{
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, cap);
    roundtrim_json_str(&j, "event", "round");
    roundtrim_json_i64(&j, "pid", r->pid);
    roundtrim_json_u64(&j, "round", r->round); /* round before ts: the key users sort by */
    if (r->merged_rounds)
        roundtrim_json_u64(&j, "merged_rounds", r->merged_rounds);
    roundtrim_json_ts(&j, "ts", r->ts);
    roundtrim_json_str(&j, "source", r->source);
    if (r->hook)
        roundtrim_json_str(&j, "hook", r->hook);
    roundtrim_json_traffic(&j, &r->traffic, r->counts_skipped);
    if (r->heap_live_known)
        roundtrim_json_u64(&j, "heap_live", r->heap_live);
    else
        roundtrim_json_str(&j, "heap_live", NULL);
    if (!r->heap_live_known && r->heap_live_skipped)
        roundtrim_json_str(&j, "heap_live_skipped", r->heap_live_skipped);
    roundtrim_json_u64(&j, "rss_before", r->rss_before);
    roundtrim_json_u64(&j, "rss_after", r->rss_after);
    roundtrim_json_u64(&j, "rss_peak", r->rss_peak);
    format_memory(&j, &r->memory);
    if (r->cgroup_known) {
        roundtrim_json_u64(&j, "cgroup_usage", r->cgroup_usage);
        if (r->cgroup_limit > 0)
            roundtrim_json_u64(&j, "cgroup_limit", r->cgroup_limit);
    }
    roundtrim_json_actions(&j, "cleanup", r->actions);
    roundtrim_json_u64(&j, "cleanup_us", r->cleanup_us);
    if (r->cleanup_skipped)
        roundtrim_json_str(&j, "cleanup_skipped", r->cleanup_skipped);
    roundtrim_json_u64(&j, "round_us", r->round_us);
    roundtrim_json_u64(&j, "cleanup_cpu_us", r->cleanup_cpu_us);
    roundtrim_json_percent(&j, "cleanup_cpu_percent", r->cleanup_cpu_us, r->round_us);
    if (r->actions & (RT_ACT_TRIM | RT_ACT_PURGE))
        roundtrim_json_u64(&j, "trim_us", r->trim_us);
    else if (r->trim_skipped)
        roundtrim_json_str(&j, "trim_skipped", r->trim_skipped);
    if (r->trim_pause_predicted_us)
        roundtrim_json_u64(&j, "trim_pause_predicted_us", r->trim_pause_predicted_us);
    if (r->trim_held_back_rounds)
        roundtrim_json_u64(&j, "trim_held_back_rounds", r->trim_held_back_rounds);
    if (r->trim_retry)
        roundtrim_json_bool(&j, "trim_retry", true);
    if (r->trim_holds) {
        roundtrim_json_u64(&j, "trim_holds", r->trim_holds);
        roundtrim_json_u64(&j, "trim_hold_max_us", r->trim_hold_max_us);
        roundtrim_json_u64(&j, "trim_holds_waited", r->trim_holds_waited);
    }
    if (r->trim_steps) {
        roundtrim_json_u64(&j, "trim_steps", r->trim_steps);
        roundtrim_json_u64(&j, "trim_steps_released_bytes", r->trim_steps_released_bytes);
        roundtrim_json_u64(&j, "trim_steps_us", r->trim_steps_us);
    }
    if (r->actions & (RT_ACT_TRIM | RT_ACT_PURGE))
        roundtrim_json_u64(&j, "trim_released_bytes", r->trim_released_bytes);
    if (r->gc_ran) {
        roundtrim_json_u64(&j, "gc_collected", r->gc_collected);
        roundtrim_json_u64(&j, "gc_freed_bytes", r->gc_freed_bytes);
        roundtrim_json_u64(&j, "gc_us", r->gc_us);
    } else if (r->gc_skipped) {
        roundtrim_json_str(&j, "gc_skipped", r->gc_skipped);
    }
    if (r->actions & RT_ACT_TORCH_EMPTY_CACHE) {
        roundtrim_json_u64(&j, "torch_empty_cache_us", r->torch_empty_cache_us);
        roundtrim_json_u64(&j, "torch_released_bytes", r->torch_released_bytes);
    } else if (r->torch_empty_cache_skipped)
        roundtrim_json_str(&j, "torch_empty_cache_skipped", r->torch_empty_cache_skipped);
    if (r->actions & RT_ACT_CUPY_FREE_BLOCKS) {
        roundtrim_json_u64(&j, "cupy_free_blocks_us", r->cupy_free_blocks_us);
        roundtrim_json_u64(&j, "cupy_released_bytes", r->cupy_released_bytes);
    } else if (r->cupy_free_blocks_skipped)
        roundtrim_json_str(&j, "cupy_free_blocks_skipped", r->cupy_free_blocks_skipped);
    if (r->actions & RT_ACT_CUDA_POOL_TRIM)
        roundtrim_json_u64(&j, "cuda_pool_trim_bytes", r->cuda_pool_trim_bytes);
    else if (r->cuda_pool_trim_skipped)
        roundtrim_json_str(&j, "cuda_pool_trim_skipped", r->cuda_pool_trim_skipped);
    roundtrim_json_str(&j, "allocator", r->allocator);
    if (r->signal_rounds_off)
        roundtrim_json_str(&j, "signal_rounds_off", r->signal_rounds_off);
    if (r->cuda.present)
        format_cuda(&j, &r->cuda);
    return roundtrim_json_end(&j);
}
