/* How the writers of the records other than the round record put each kind of key their field
 * tables declare (the *_fields.def files of runtime/output): put_<KIND>(json, key, value). A writer defines
 * the kinds only it has (TRAFFIC, HOOKS, HOLDERS). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_EVENT_FIELDS_H
#define ROUNDTRIM_RUNTIME_OUTPUT_EVENT_FIELDS_H

#include <stdint.h>

#include "policy/cleanup_actions.h"
#include "policy/json_writer.h"

static inline void put_UINT(struct roundtrim_json *j, const char *key, uint64_t v)
{
    roundtrim_json_u64(j, key, v);
}

static inline void put_TEXT(struct roundtrim_json *j, const char *key, const char *v)
{
    roundtrim_json_str(j, key, v);
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

/* One row: its key when present holds. */
#define RT_EVENT_PUT(j, name, kind, present, value)                                                \
    do {                                                                                           \
        if (present)                                                                               \
            put_##kind(j, #name, value);                                                           \
    } while (0)

#endif
