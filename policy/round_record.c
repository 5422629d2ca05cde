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
    /* the round record's traffic rows, with the same null */
#define RT_TRAFFIC(name, unit, meaning)                                                            \
    if (skipped)                                                                                   \
        roundtrim_json_str(j, #name, NULL);                                                        \
    else                                                                                           \
        roundtrim_json_u64(j, #name, t->name);
#include "policy/round_fields.def"
    if (skipped)
        roundtrim_json_str(j, "counts_skipped", skipped);
}

static const char *const part_names[RT_PART_COUNT] = {
#define RT_MEM_PART(id, name, meaning) [id] = #name,
#include "policy/round_fields.def"
};

const char *roundtrim_mem_part_name(enum roundtrim_mem_part p)
{
    return (unsigned)p < RT_PART_COUNT ? part_names[p] : "unknown";
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

#define put_TEXT        roundtrim_json_str
#define put_REASON      roundtrim_json_str
#define put_STEP_REASON roundtrim_json_str
#define put_PID         roundtrim_json_i64
#define put_ROUNDS      roundtrim_json_u64
#define put_UINT        roundtrim_json_u64
#define put_TS          roundtrim_json_ts
#define put_FLAG        roundtrim_json_bool
#define put_ACTIONS     roundtrim_json_actions

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
        if (!m->part_skipped[p]) {
            roundtrim_json_u64(j, part_names[p], m->value[p]);
            continue;
        }
        char skipped_key[40];
        snprintf(skipped_key, sizeof skipped_key, "%s_skipped", part_names[p]);
        roundtrim_json_str(j, part_names[p], NULL);
        roundtrim_json_str(j, skipped_key, m->part_skipped[p]);
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
