#include "policy/prom_format.h"

#include "policy/bounded_text.h"
#include "policy/diagnosis.h"
#include "policy/round_record.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct out {
    struct roundtrim_text text;
    char labels[400];
};

static void metric(struct out *o, const char *name, const char *type, const char *help, uint64_t v)
{
    roundtrim_text_printf(&o->text, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %" PRIu64 "\n", name, help,
                          name, type, name, o->labels, v);
}

static void metric_seconds_typed(struct out *o, const char *name, const char *type,
                                 const char *help, uint64_t us)
{
    roundtrim_text_printf(&o->text, "# HELP %s %s\n# TYPE %s %s\n%s{%s} ", name, help, name, type,
                          name, o->labels);
    roundtrim_text_micro(&o->text, us);
    roundtrim_text_bytes(&o->text, "\n", 1);
}

static void metric_seconds(struct out *o, const char *name, const char *help, uint64_t us)
{
    metric_seconds_typed(o, name, "gauge", help, us);
}

/* One metric with a label of its own per value: the header once, then a line per (value, v). */
static void labelled_begin(struct out *o, const char *name, const char *type, const char *help)
{
    roundtrim_text_printf(&o->text, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void labelled_value(struct out *o, const char *name, const char *label, const char *value,
                           const char *number)
{
    roundtrim_text_printf(&o->text, "%s{%s,%s=\"%s\"} %s\n", name, o->labels, label, value, number);
}

/* When the growth the last diagnosis found reaches the memory limit: only where it made a
 * forecast (a series that is absent says none is due). */
static void forecast_metrics(struct out *o, const struct roundtrim_forecast *f)
{
    if (f->skipped)
        return;
    metric(o, "roundtrim_memory_limit_rounds_left", "gauge",
           "Rounds until the growth the last diagnosis found uses up the memory left under the "
           "cgroup's limit or the machine's available memory.",
           f->rounds_to_limit);
    metric(o, "roundtrim_memory_limit_round", "gauge",
           "The round in which that growth reaches the memory limit.", f->limit_round);
    if (f->before_job_end < 0)
        return;
    metric(o, "roundtrim_job_rounds", "gauge", "The job's rounds (ROUNDTRIM_JOB_ROUNDS).",
           f->job_rounds);
    metric(o, "roundtrim_memory_limit_before_job_end", "gauge",
           "1 when the growth reaches the memory limit before the job's last round, else 0.",
           (uint64_t)f->before_job_end);
}

/* Where the memory is, and how each part grew per round over the last diagnosis. */
static void memory_metrics(struct out *o, const struct roundtrim_prom_input *in)
{
    const struct roundtrim_memory_parts *m = &in->last->memory;
    char num[32];
    if (!m->skipped) {
        labelled_begin(o, "roundtrim_memory_bytes", "gauge",
                       "Resident memory by part at the last round boundary (device memory apart).");
        for (int p = 0; p < RT_PART_COUNT; p++) {
            if (m->part_skipped[p])
                continue;
            snprintf(num, sizeof num, "%" PRIu64, m->value[p]);
            labelled_value(o, "roundtrim_memory_bytes", "part",
                           roundtrim_mem_part_name((enum roundtrim_mem_part)p), num);
        }
    }
    const struct roundtrim_diagnosis *d = in->diagnosis;
    if (!d || d->skipped)
        return;
    labelled_begin(o, "roundtrim_growth_bytes_per_round", "gauge",
                   "Growth of each part of memory per round over the last diagnosis window.");
    for (int p = 0; p < RT_PART_COUNT; p++) {
        if (!d->slope_known[p])
            continue;
        snprintf(num, sizeof num, "%.0f", d->slope[p]);
        labelled_value(o, "roundtrim_growth_bytes_per_round", "part",
                       roundtrim_mem_part_name((enum roundtrim_mem_part)p), num);
    }
    labelled_begin(o, "roundtrim_diagnosis", "gauge",
                   "1 for the cause of growth the last diagnosis found (leak, fragmentation, "
                   "cuda_cache, outside_heap; none: memory does not grow; unsure: not yet "
                   "told), 0 for the others.");
    for (int c = 0; c < RT_CAUSE_COUNT; c++)
        labelled_value(o, "roundtrim_diagnosis", "cause",
                       roundtrim_cause_name((enum roundtrim_cause)c),
                       c == (int)d->cause ? "1" : "0");
    snprintf(num, sizeof num, "%.0f", d->growth_per_round);
    roundtrim_text_printf(
        &o->text,
        "# HELP roundtrim_growth_total_bytes_per_round Growth of RSS and device memory per round "
        "over the last diagnosis window.\n# TYPE roundtrim_growth_total_bytes_per_round gauge\n"
        "roundtrim_growth_total_bytes_per_round{%s} %s\n",
        o->labels, num);
    metric(o, "roundtrim_diagnosis_persisted_windows", "gauge",
           "Successive windows of rounds the growing part grew in, ending at the last diagnosis "
           "(a cause of growth is named from 4).",
           (uint64_t)d->persisted);
    metric(o, "roundtrim_recovered_bytes_per_round", "gauge",
           "Memory roundtrim's cleanup gave back per round over the last diagnosis window.",
           (uint64_t)(d->recovered_per_round + 0.5));
    forecast_metrics(o, &d->forecast);
}

/* Label values cut to cap (at a whole character or escape): Prometheus drops the whole file for
 * one invalid label, so a process name cut at 15 bytes inside a character, or any bytes set with
 * PR_SET_NAME, must not reach it as they are. */
static void label_value(char *dst, size_t cap, const char *v)
{
    struct roundtrim_text t;
    roundtrim_text_begin(&t, dst, cap);
    roundtrim_text_label_value(&t, v);
}

static const char *const step_names[] = {
#define RT_STEP(step, skip, label) [RT_CLEANUP_STEP_##step] = #step,
#include "policy/round_fields.def"
    [RT_CLEANUP_STEP_OTHER] = "other",
};

static struct roundtrim_skip_row *
skip_row(struct roundtrim_skip_counts *c, enum roundtrim_cleanup_step step, enum roundtrim_skip why)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->row[i].step == step && c->row[i].why == why)
            return &c->row[i];
    /* The last row is kept for the pairs that find no room: action and reason "other". */
    if (c->n == ROUNDTRIM_PROM_SKIP_ROWS)
        return &c->row[c->n - 1];
    if (c->n == ROUNDTRIM_PROM_SKIP_ROWS - 1) {
        step = RT_CLEANUP_STEP_OTHER;
        why = RT_SKIP_NONE;
    }
    struct roundtrim_skip_row *row = &c->row[c->n++];
    *row = (struct roundtrim_skip_row){step, why, 0};
    return row;
}

static void skip_add(struct roundtrim_skip_counts *c, enum roundtrim_cleanup_step step,
                     enum roundtrim_skip why)
{
    if (roundtrim_skip_name(why))
        skip_row(c, step, why)->count++;
}

void roundtrim_skip_counts_add(struct roundtrim_skip_counts *c,
                               const struct roundtrim_round_record *r)
{
    /* the steps of the round record's table, in the order they run */
#define RT_STEP(step, skip, label) skip_add(c, RT_CLEANUP_STEP_##step, r->skip);
#include "policy/round_fields.def"
}

/* One series per step and reason seen; none before the first skip. */
static void skip_metrics(struct out *o, const struct roundtrim_skip_counts *c)
{
    if (!c || c->n == 0)
        return;
    labelled_begin(
        o, "roundtrim_cleanup_skipped_total", "counter",
        "Cleanup steps that were due and did not run, by step (action) and why (reason).");
    for (size_t i = 0; i < c->n; i++) {
        const struct roundtrim_skip_row *row = &c->row[i];
        /* the reasons' names are the table's: plain words, no escaping */
        const char *reason =
            row->step == RT_CLEANUP_STEP_OTHER ? "other" : roundtrim_skip_name(row->why);
        roundtrim_text_printf(
            &o->text,
            "roundtrim_cleanup_skipped_total{%s,action=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
            o->labels, step_names[row->step], reason, row->count);
    }
}

/* The limit and when the round ended: what alerts on pressure and on silence compare with. */
static void limit_and_time_metrics(struct out *o, const struct roundtrim_round_record *r)
{
    if (r->mem_limit > 0) {
        labelled_begin(o, "roundtrim_memory_limit_bytes", "gauge",
                       "Memory limit of the process: its cgroup's (source cgroup), else MemTotal "
                       "(source memtotal).");
        char num[32];
        snprintf(num, sizeof num, "%" PRIu64, r->mem_limit);
        labelled_value(o, "roundtrim_memory_limit_bytes", "source",
                       r->mem_limit_from_cgroup ? "cgroup" : "memtotal", num);
    }
    roundtrim_text_printf(
        &o->text,
        "# HELP roundtrim_last_round_timestamp_seconds When the last round ended, in seconds "
        "since the epoch.\n# TYPE roundtrim_last_round_timestamp_seconds gauge\n"
        "roundtrim_last_round_timestamp_seconds{%s} %.3f\n",
        o->labels, r->ts);
}

size_t roundtrim_prom_format(const struct roundtrim_prom_input *in, char *buf, size_t cap)
{
    struct out o;
    roundtrim_text_begin(&o.text, buf, cap);
    char role[32], proc[96], framework[32];
    label_value(role, sizeof role, in->role);
    label_value(proc, sizeof proc, in->process);
    label_value(framework, sizeof framework, in->framework ? in->framework : "none");
    int n = snprintf(o.labels, sizeof o.labels,
                     "pid=\"%d\",role=\"%s\",process=\"%s\",framework=\"%s\"", in->pid, role, proc,
                     framework);
    /* Containers sharing a metrics folder run their programs as PID 1 each: the host name
     * keeps their series apart. */
    if (in->hostname && n > 0 && (size_t)n < sizeof o.labels) {
        char host[96];
        label_value(host, sizeof host, in->hostname);
        snprintf(o.labels + n, sizeof o.labels - (size_t)n, ",hostname=\"%s\"", host);
    }
    const struct roundtrim_round_record *r = in->last;
    metric(&o, "roundtrim_rounds_total", "counter", "Rounds ended.", in->rounds);
    metric(&o, "roundtrim_cleanups_total", "counter", "Cleanups run (rounds and memory pressure).",
           in->cleanups);
    if (!r->counts_skipped) { /* the program's malloc does not reach roundtrim: no zeros */
        metric(&o, "roundtrim_malloc_calls_total", "counter",
               "Blocks handed out by the malloc family.", in->total->malloc_calls);
        metric(&o, "roundtrim_free_calls_total", "counter", "Blocks released by the malloc family.",
               in->total->free_calls);
        metric(&o, "roundtrim_malloc_bytes_total", "counter",
               "Usable bytes of the blocks handed out.", in->total->malloc_bytes);
        metric(&o, "roundtrim_free_bytes_total", "counter", "Usable bytes of the blocks released.",
               in->total->free_bytes);
    }
    metric(&o, "roundtrim_released_bytes_total", "counter",
           "Resident bytes given back to the OS by cleanups.", in->released_bytes_total);
    metric(&o, "roundtrim_rss_bytes", "gauge", "Resident set size after the last round.",
           r->rss_after);
    metric(&o, "roundtrim_rss_round_start_bytes", "gauge",
           "Resident set size at the last round boundary, before cleanup.", r->rss_before);
    metric(&o, "roundtrim_rss_peak_bytes", "gauge", "Peak resident set size within the last round.",
           r->rss_peak);
    if (r->heap_live_known)
        metric(&o, "roundtrim_heap_live_bytes", "gauge",
               "Bytes in live heap blocks as the allocator counts them.", r->heap_live);
    if (r->cgroup_known)
        metric(&o, "roundtrim_cgroup_usage_bytes", "gauge",
               "Memory charged to the process's cgroup (page cache included).", r->cgroup_usage);
    metric_seconds(&o, "roundtrim_last_cleanup_seconds", "Duration of the last round's cleanup.",
                   r->cleanup_us);
    metric_seconds_typed(&o, "roundtrim_cleanup_cpu_seconds_total", "counter",
                         "CPU time cleanups took (trims, trim steps, gc and cache release).",
                         in->cleanup_cpu_us_total);
    if (r->cuda.present) {
        metric(&o, "roundtrim_cuda_live_bytes", "gauge", "Device bytes allocated and not freed.",
               r->cuda.live_bytes);
        metric(&o, "roundtrim_cuda_peak_bytes", "gauge",
               "Peak device bytes allocated within the last round.", r->cuda.peak_bytes);
        metric(&o, "roundtrim_cuda_alloc_bytes_total", "counter", "Device bytes allocated.",
               in->cuda_alloc_bytes_total);
        metric(&o, "roundtrim_cuda_free_bytes_total", "counter", "Device bytes freed.",
               in->cuda_free_bytes_total);
    }
    skip_metrics(&o, in->skips);
    limit_and_time_metrics(&o, r);
    memory_metrics(&o, in);
    return roundtrim_text_end(&o.text);
}
