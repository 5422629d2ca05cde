/* How the records' writers put the kinds of key their tables share: put_<KIND>(json, key, value)
 * for the kinds named in the *_fields.def tables (the round record's RT_KIND rows, the event kinds
 * of scripts/tools/roundtrim-round-fields.c). A writer defines the kinds only its record has.
 *
 * A writer puts a table's rows by naming RT_PUT_ROW as the table's row macro before including it,
 * with the record being written in scope as `struct roundtrim_json *rt_out`:
 *
 *     struct roundtrim_json *rt_out = &j;
 *     #define RT_EVENT_FIELD RT_PUT_ROW
 *     #include "runtime/output/pressure_fields.def"
 */
#ifndef ROUNDTRIM_POLICY_RECORD_PUT_H
#define ROUNDTRIM_POLICY_RECORD_PUT_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/cleanup_actions.h"
#include "policy/json_writer.h"
#include "policy/skip_reason.h"

static inline void put_UINT(struct roundtrim_json *j, const char *key, uint64_t v)
{
    roundtrim_json_u64(j, key, v);
}

static inline void put_INT(struct roundtrim_json *j, const char *key, int64_t v)
{
    roundtrim_json_i64(j, key, v);
}

static inline void put_TEXT(struct roundtrim_json *j, const char *key, const char *v)
{
    roundtrim_json_str(j, key, v);
}

/* A key only present when true. */
static inline void put_FLAG(struct roundtrim_json *j, const char *key, bool v)
{
    roundtrim_json_bool(j, key, v);
}

static inline void put_BOOL(struct roundtrim_json *j, const char *key, bool v)
{
    roundtrim_json_bool(j, key, v);
}

/* A skip reason's name, null for RT_SKIP_NONE. */
static inline void put_REASON(struct roundtrim_json *j, const char *key, enum roundtrim_skip why)
{
    roundtrim_json_str(j, key, roundtrim_skip_name(why));
}

static inline void put_ACTIONS(struct roundtrim_json *j, const char *key, unsigned actions)
{
    roundtrim_json_actions(j, key, actions);
}

/* thousandths, written with two decimals */
static inline void put_HUNDREDTHS(struct roundtrim_json *j, const char *key, uint64_t milli)
{
    roundtrim_json_percent(j, key, milli, 100000);
}

/* One row of a table: its key when its present column holds. */
#define RT_PUT_ROW(name, kind, unit, when, meaning, present, value)                                \
    do {                                                                                           \
        if (present)                                                                               \
            put_##kind(rt_out, #name, value);                                                      \
    } while (0);

#endif
