#include "policy/round_record.h"

#include <stdio.h>

#include "policy/record_put.h"

void roundtrim_json_traffic(struct roundtrim_json *j, const struct roundtrim_traffic *t,
                            enum roundtrim_skip skipped)
{
    /* the round record's traffic rows, with the same null */
#define RT_TRAFFIC(name, unit, meaning)                                                            \
    if (skipped)                                                                                   \
        roundtrim_json_str(j, #name, NULL);                                                        \
    else                                                                                           \
        roundtrim_json_u64(j, #name, t->name);
#include "policy/round_fields.def"
}

/* How the writer puts a value of each kind of field (policy/round_fields.def's RT_KIND rows). */
struct ratio {
    uint64_t part, whole;
};

static struct ratio share_of(uint64_t part, uint64_t whole)
{
    return (struct ratio){part, whole};
}

static bool cuda_host_used(const struct roundtrim_cuda_round *c)
{
    return c->host_alloc_calls || c->host_free_calls || c->host_live_bytes;
}

/* The kinds only the round record has; the shared ones are policy/record_put.h's. */
#define put_STEP_REASON put_REASON
#define put_PID         roundtrim_json_i64
#define put_ROUNDS      roundtrim_json_u64
#define put_TS          roundtrim_json_ts

static void put_UINT_OR_NULL(struct roundtrim_json *j, const char *k, uint64_t v)
{
    roundtrim_json_u64(j, k, v);
}

static void put_PERCENT(struct roundtrim_json *j, const char *k, struct ratio v)
{
    roundtrim_json_percent(j, k, v.part, v.whole);
}

/* A key of the table: written when present, as null when null_if, else as its kind says. */
#define PUT_FIELD(j, name, kind, present, null_if, value)                                          \
    do {                                                                                           \
        if (!(present))                                                                            \
            break;                                                                                 \
        if (null_if)                                                                               \
            roundtrim_json_str(j, #name, NULL);                                                    \
        else                                                                                       \
            put_##kind(j, #name, value);                                                           \
    } while (0)

/* Each part's bytes, or null with "<part>_skipped" saying why. */
static void put_PARTS(struct roundtrim_json *j, const char *k,
                      const struct roundtrim_memory_parts *m)
{
    (void)k;
    for (int p = 0; p < RT_PART_COUNT; p++) {
        const char *name = roundtrim_mem_part_name((enum roundtrim_mem_part)p);
        if (!m->part_skipped[p]) {
            roundtrim_json_u64(j, name, m->value[p]);
            continue;
        }
        char skipped_key[40];
        snprintf(skipped_key, sizeof skipped_key, "%s_skipped", name);
        roundtrim_json_str(j, name, NULL);
        put_REASON(j, skipped_key, m->part_skipped[p]);
    }
}

static void put_MEMORY(struct roundtrim_json *j, const char *k,
                       const struct roundtrim_memory_parts *m)
{
    roundtrim_json_object_begin(j, k);
#define RT_MEMORY_FIELD(name, kind, unit, when, meaning, present, null_if, value)                  \
    PUT_FIELD(j, name, kind, present, null_if, value);
#include "policy/round_fields.def"
    roundtrim_json_object_end(j);
}

size_t roundtrim_round_record_format(const struct roundtrim_round_record *r, char *buf, size_t cap)
{
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, cap);
#define RT_FIELD(name, kind, unit, when, meaning, present, null_if, value)                         \
    PUT_FIELD(&j, name, kind, present, null_if, value);
#include "policy/round_fields.def"
    return roundtrim_json_end(&j);
}
