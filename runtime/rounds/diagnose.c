#include "runtime/rounds/diagnose.h"

#include <string.h>

#include "policy/round_record.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/core/settings.h"
#include "runtime/output/diagnosis_record.h"
#include "runtime/python/bridge.h"
#include "runtime/sites/sampler.h"

#define WINDOW_MAX ROUNDTRIM_DIAG_HISTORY

static struct roundtrim_diag_sample window[WINDOW_MAX];
static size_t filled, next_at; /* a ring: the oldest is at next_at once full */
static uint64_t rounds_since;  /* rounds measured since the last diagnosis */
static uint64_t unjudged;      /* rounds recorded since the last diagnosis, measured or not */
static uint64_t last_round;    /* the latest round recorded */
static struct roundtrim_diagnosis latest;
static bool have_latest;
static bool sites_tried; /* sampling was started, or tried, at a verdict of growth */

static size_t window_size(void)
{
    uint64_t k = roundtrim_config()->diag_rounds;
    return k < ROUNDTRIM_DIAG_MIN_ROUNDS ? ROUNDTRIM_DIAG_MIN_ROUNDS
           : k > WINDOW_MAX              ? WINDOW_MAX
                                         : (size_t)k;
}

/* Each kind of policy/diag_input.def's rows, filled from the round record. */
#define FILL_UINT(m, v)   s->m = (v)
#define FILL_FLAG(m, v)   s->m = (v)
#define FILL_REASON(m, v) s->m = (v)
#define FILL_PARTS(m, v)                                                                           \
    for (int p = 0; p < RT_PART_COUNT; p++) {                                                      \
        s->known[p] = (v)->part_skipped[p] == RT_SKIP_NONE;                                        \
        s->m[p] = (v)->value[p];                                                                   \
    }
#define FILL_HEADROOM(m, v)                                                                        \
    s->m##_of = (v)->mem_headroom_of;                                                              \
    s->m = (v)->mem_headroom

static void sample_of(const struct roundtrim_round_record *r, struct roundtrim_diag_sample *s)
{
    memset(s, 0, sizeof *s);
#define RT_DIAG_IN(member, kind, record, value) FILL_##kind(member, value);
#include "policy/diag_input.def"
}

/* The whole history, oldest first; returns its length. */
static size_t history(struct roundtrim_diag_sample *ordered)
{
    for (size_t i = 0; i < filled; i++)
        ordered[i] = window[(next_at + WINDOW_MAX - filled + i) % WINDOW_MAX];
    return filled;
}

/* ROUNDTRIM_SITES unset: sampling starts at the first verdict that asks for sites (a leak, or
 * live growth not yet long enough to call), so that the records from then on name the code that
 * allocates it without a second run, and a process whose memory stays flat never pays for
 * sampling. Tried once. True when it started now. */
static bool sites_when_growing(const struct roundtrim_diagnosis *d)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (sites_tried || cfg->sites || roundtrim_config_is_explicit(cfg, RT_OPT_SITES) ||
        !roundtrim_diagnosis_wants_sites(d))
        return false;
    sites_tried = true;
    return roundtrim_sampler_start_late(cfg->sites_sample, last_round) == RT_SKIP_NONE;
}

static void write_record(void)
{
    /* The verdict's figures cover the last window_size() of the history, the persistence of
     * growth all of it. */
    struct roundtrim_diag_sample ordered[WINDOW_MAX];
    size_t n = history(ordered);
    const struct roundtrim_config *cfg = roundtrim_config();
    struct roundtrim_diag_context ctx = {
        .cleanup_every = cfg->gc_rounds,
        .cuda_empty_cache = cfg->cuda_empty_cache,
        .sites = !roundtrim_sampler_skipped(),
        .sites_skipped = cfg->sites ? roundtrim_skip_name(roundtrim_sampler_skipped()) : NULL,
        .window = window_size(),
        .python = roundtrim_python_found(),
        .allocator = roundtrim_allocator_name(),
        .job_rounds = cfg->job_rounds,
    };
    roundtrim_diagnose(ordered, n, &ctx, &latest);
    if (sites_when_growing(&latest)) { /* its advice says where the sites are now */
        ctx.sites = true;
        roundtrim_diagnose(ordered, n, &ctx, &latest);
    }
    have_latest = true;
    rounds_since = unjudged = 0;
    roundtrim_diagnosis_record(last_round, &latest);
}

void roundtrim_diagnose_round(const struct roundtrim_round_record *r)
{
    last_round = r->round;
    unjudged++;
    /* The first round carries the program's start (imports, caches filling): not a trend. */
    if (r->memory.skipped || r->round - r->merged_rounds <= 1)
        return;
    sample_of(r, &window[next_at]);
    next_at = (next_at + 1) % WINDOW_MAX;
    if (filled < WINDOW_MAX)
        filled++;
    if (++rounds_since >= window_size())
        write_record();
}

/* A process that recorded rounds since its last diagnosis ends with one on them, whatever they
 * allow: where they were recorded as it exits (their memory not measured) or too few were
 * measured, a record that says so ("too_few_rounds"), not none. The verdict stays on the rounds
 * measured before. */
void roundtrim_diagnose_exit(void)
{
    sites_tried = true; /* no sampling started on the way out */
    if (unjudged > 0)
        write_record();
}

const struct roundtrim_diagnosis *roundtrim_diagnose_latest(void)
{
    return have_latest ? &latest : NULL;
}

void roundtrim_diagnose_fork_child(void)
{
    filled = next_at = 0;
    rounds_since = unjudged = last_round = 0;
    have_latest = false;
    sites_tried = false;
}
