#include "runtime/output/sites_record.h"

#include <stdio.h>
#include <string.h>

#include "policy/code_origin.h"
#include "policy/record_put.h"
#include "runtime/sites/frame_names.h"
#include "runtime/sites/object_sampler.h"
#include "runtime/output/log_writer.h"
#include "runtime/python/frames.h"
#include "runtime/sites/sampler.h"
#include "runtime/sites/site_table.h"

/* Worker only (or the exiting thread, under the round lock): static buffers, no allocation. */
static uint64_t round_live[ROUNDTRIM_SITES_MAX], live[ROUNDTRIM_SITES_MAX];
static uint64_t live_before[ROUNDTRIM_SITES_MAX], grown[ROUNDTRIM_SITES_MAX];
static uint64_t fell[ROUNDTRIM_SITES_MAX];
static uint32_t referenced[ROUNDTRIM_SITES_MAX]; /* samples the scan saw, live or kept */
static uint64_t sites_dropped_before;
static uint32_t given_back; /* after the previous record */
static char line[ROUNDTRIM_SITES_RECORD_MAX];

struct span {
    uint32_t first, last;
};

/* At the end of the span a sample is live when allocated by then and freed after (or not yet);
 * it counts for the span's own growth when allocated within it. */
static void add_sample(const struct roundtrim_sample_view *v, void *arg)
{
    const struct span *s = arg;
    int32_t i = roundtrim_site_of_ref(v->site);
    if (i < 0) /* freed, and its site given back since */
        return;
    /* An object sampled by a wrapper the allocator's calls went past: freed maybe, unseen. */
    if (!roundtrim_python_object_sample_counts(v->wrapper))
        return;
    referenced[i]++;
    if (v->round > s->last || (v->freed_in != 0 && v->freed_in <= s->last))
        return;
    live[i] += v->weight;
    if (v->round >= s->first)
        round_live[i] += v->weight;
}

/* The indexes of the n largest nonzero values, largest first. */
static int top(const uint64_t *value, uint32_t count, uint32_t *out, int n)
{
    int k = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (value[i] == 0)
            continue;
        int j = k < n ? k++ : n;
        if (j == n) {
            if (value[i] <= value[out[n - 1]])
                continue;
            j = n - 1;
        }
        while (j > 0 && value[out[j - 1]] < value[i]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
    }
    return k;
}

static void put_HEX_ID(struct roundtrim_json *j, const char *key, uint64_t id)
{
    char text[24];
    snprintf(text, sizeof text, "%016llx", (unsigned long long)id);
    roundtrim_json_str(j, key, text);
}

static void put_PY_FRAMES(struct roundtrim_json *j, const char *key, const struct roundtrim_site *s)
{
    roundtrim_json_array_begin(j, key);
    for (int k = 0; k < s->py_depth; k++) {
        const struct roundtrim_site_py *f = &s->py[k];
        const struct roundtrim_code_names *n = roundtrim_code_names_find(f->code, f->names_key);
        struct roundtrim_json *rt_out = j;
        roundtrim_json_object_begin(j, NULL);
#define RT_PY_FRAME_FIELD RT_PUT_ROW
#include "runtime/output/sites_fields.def"
        roundtrim_json_object_end(j);
    }
    roundtrim_json_array_end(j);
}

static void put_NATIVE_FRAMES(struct roundtrim_json *j, const char *key,
                              const struct roundtrim_site *s)
{
    roundtrim_json_array_begin(j, key);
    for (int k = 0; k < s->depth; k++)
        roundtrim_frame_json(j, s->frames[k]);
    roundtrim_json_array_end(j);
}

static void site_object(struct roundtrim_json *j, uint32_t i)
{
    const struct roundtrim_site *s = roundtrim_site_at(i);
    struct roundtrim_json *rt_out = j;
    roundtrim_json_object_begin(j, NULL);
#define RT_SITE_FIELD RT_PUT_ROW
#include "runtime/output/sites_fields.def"
    roundtrim_json_object_end(j);
}

/* One of the record's lists: the sites at these indexes. */
struct site_list {
    const uint32_t *idx;
    int n;
};

static void put_SITES(struct roundtrim_json *j, const char *key, struct site_list l)
{
    roundtrim_json_array_begin(j, key);
    for (int k = 0; k < l.n; k++)
        site_object(j, l.idx[k]);
    roundtrim_json_array_end(j);
}

/* Once the table fills (its stack sites half taken, or a sample gone without a site), the sites
 * that hold no sample are given back: a large program's start leaves thousands of them, and a
 * stack that appears later (a leak) must still find an entry. */
static uint32_t give_back_idle(uint64_t dropped)
{
    if (roundtrim_site_stacks_taken() < ROUNDTRIM_SITES_MAIN / 2 &&
        roundtrim_site_lines_taken() == 0 && dropped == 0)
        return 0;
    uint32_t given = 0;
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        if (referenced[i] != 0 || !roundtrim_site_at(i))
            continue;
        if (roundtrim_site_give_back(i)) {
            live_before[i] = 0;
            given++;
        }
    }
    return given;
}

void roundtrim_sites_record(uint64_t first, uint64_t last, double ts)
{
    if (roundtrim_sampler_skipped())
        return;
    roundtrim_frame_names_refresh();
    memset(round_live, 0, sizeof round_live);
    memset(live, 0, sizeof live);
    memset(referenced, 0, sizeof referenced);
    struct span span = {(uint32_t)first, (uint32_t)last};
    uint64_t samples_live = roundtrim_sample_table_scan(add_sample, &span, span.last);
    roundtrim_sampler_reported(span.last);
    struct roundtrim_sampler_totals t;
    roundtrim_sampler_totals(&t);
    uint64_t sites_dropped = t.sites_dropped - sites_dropped_before;

    uint32_t sites = 0;
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        const struct roundtrim_site *s = roundtrim_site_at(i);
        if (!s)
            live[i] = round_live[i] = 0;
        sites += s != NULL;
    }
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++) {
        grown[i] = live[i] > live_before[i] ? live[i] - live_before[i] : 0;
        /* A site that fell is said with its new bytes: a reader keeps a site's last known
         * bytes while it is in no list. */
        fell[i] = live[i] < live_before[i] && roundtrim_site_at(i) ? live_before[i] - live[i] : 0;
    }
    uint32_t by_growth[ROUNDTRIM_SITES_TOP], by_round[ROUNDTRIM_SITES_TOP],
        by_live[ROUNDTRIM_SITES_TOP], by_fall[ROUNDTRIM_SITES_TOP];
    int n_growth = top(grown, ROUNDTRIM_SITES_MAX, by_growth, ROUNDTRIM_SITES_TOP);
    int n_fall = top(fell, ROUNDTRIM_SITES_MAX, by_fall, ROUNDTRIM_SITES_TOP);
    int n_round = top(round_live, ROUNDTRIM_SITES_MAX, by_round, ROUNDTRIM_SITES_TOP);
    int n_live = top(live, ROUNDTRIM_SITES_MAX, by_live, ROUNDTRIM_SITES_TOP);

    struct roundtrim_json j, *rt_out = &j;
    roundtrim_log_record_begin(&j, line, sizeof line, "sites", ts);
#define RT_EVENT_FIELD RT_PUT_ROW
#include "runtime/output/sites_fields.def"
    roundtrim_log_record_write(&j);
    memcpy(live_before, live, sizeof live);
    sites_dropped_before = t.sites_dropped;
    /* Once written: the record's sites are read from their entries. */
    given_back = give_back_idle(sites_dropped);
}

void roundtrim_sites_record_fork_child(void)
{
    memset(live_before, 0, sizeof live_before);
    struct roundtrim_sampler_totals t;
    roundtrim_sampler_totals(&t);
    sites_dropped_before = t.sites_dropped;
    given_back = 0;
}
