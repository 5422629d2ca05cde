/* The diagnosis record's keys after "round", as policy/diagnosis_fields.def declares them: what
 * the library's record (runtime/output/diagnosis_record.c) and roundtrim-diagnose write. */
#include <stdint.h>

#include "policy/diagnosis.h"
#include "policy/forecast.h"
#include "policy/mem_parts.h"
#include "policy/record_put.h"

static int64_t rounded(double v)
{
    return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

/* 0: not known */
static void put_UINT_OR_NULL(struct roundtrim_json *j, const char *key, uint64_t v)
{
    if (v)
        roundtrim_json_u64(j, key, v);
    else
        roundtrim_json_str(j, key, NULL);
}

/* -1: not known */
static void put_BOOL_OR_NULL(struct roundtrim_json *j, const char *key, int v)
{
    if (v >= 0)
        roundtrim_json_bool(j, key, v == 1);
    else
        roundtrim_json_str(j, key, NULL);
}

static void put_CAUSE(struct roundtrim_json *j, const char *key,
                      const struct roundtrim_diagnosis *d)
{
    roundtrim_json_str(j, key, d->skipped ? NULL : roundtrim_cause_name(d->cause));
}

static void put_SLOPES(struct roundtrim_json *j, const char *key,
                       const struct roundtrim_diagnosis *d)
{
    roundtrim_json_object_begin(j, key);
    for (int p = 0; p < RT_PART_COUNT; p++) {
        const char *name = roundtrim_mem_part_name((enum roundtrim_mem_part)p);
        if (d->slope_known[p])
            roundtrim_json_i64(j, name, rounded(d->slope[p]));
        else
            roundtrim_json_str(j, name, NULL);
    }
    roundtrim_json_object_end(j);
}

/* The causes with a share, in percent. */
static void put_SHARES(struct roundtrim_json *j, const char *key,
                       const struct roundtrim_diagnosis *d)
{
    roundtrim_json_object_begin(j, key);
    for (int k = 1; k < RT_CAUSE_COUNT; k++)
        if (d->share[k] > 0)
            roundtrim_json_u64(j, roundtrim_cause_name((enum roundtrim_cause)k),
                               (uint64_t)rounded(100 * d->share[k]));
    roundtrim_json_object_end(j);
}

/* Bytes by cleanup action (RT_DIAG_ACTION rows). */
static void put_ACTION_BYTES(struct roundtrim_json *j, const char *key, const double *v)
{
    roundtrim_json_object_begin(j, key);
    for (int a = 0; a < RT_DIAG_ACTION_COUNT; a++)
        roundtrim_json_u64(j, roundtrim_diag_action_name((enum roundtrim_diag_action)a),
                           (uint64_t)rounded(v[a]));
    roundtrim_json_object_end(j);
}

static void put_FINDINGS(struct roundtrim_json *j, const char *key, unsigned findings)
{
    roundtrim_json_array_begin(j, key);
    for (unsigned b = 0; b < RT_FIND_COUNT_BITS; b++)
        if (findings & (1u << b))
            roundtrim_json_array_str(j, roundtrim_finding_name(b));
    roundtrim_json_array_end(j);
}

static void put_FORECAST(struct roundtrim_json *rt_out, const char *key,
                         const struct roundtrim_forecast *f)
{
    roundtrim_json_object_begin(rt_out, key);
#define RT_FORECAST_FIELD RT_PUT_ROW
#include "policy/diagnosis_fields.def"
    roundtrim_json_object_end(rt_out);
}

static void put_SITES_SAID(struct roundtrim_json *j, const char *key, enum roundtrim_sites_said s)
{
    static const char *const names[RT_SITES_SAID_COUNT] = {
#define RT_SITES_SAID(id, name, meaning) [RT_SITES_SAID_##id] = #name,
#include "policy/diag_causes.def"
    };
    roundtrim_json_str(j, key, s > RT_SITES_SAID_NONE && s < RT_SITES_SAID_COUNT ? names[s] : NULL);
}

static void put_ADVICE_SITES(struct roundtrim_json *rt_out, const char *key,
                             const struct roundtrim_sites_advice *a)
{
    roundtrim_json_object_begin(rt_out, key);
#define RT_ADVICE_SITES_FIELD RT_PUT_ROW
#include "policy/diagnosis_fields.def"
    roundtrim_json_object_end(rt_out);
}

void roundtrim_diagnosis_json(struct roundtrim_json *rt_out, const struct roundtrim_diagnosis *d)
{
#define RT_DIAG_FIELD RT_PUT_ROW
#include "policy/diagnosis_fields.def"
}
