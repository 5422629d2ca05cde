/* The JSON writer the log's records are written with: one object a line, bounded. */
#ifndef ROUNDTRIM_POLICY_JSON_WRITER_H
#define ROUNDTRIM_POLICY_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/bounded_text.h"

/* A JSON writer over bounded text: never writes past cap, and remembers whether it ran out of
 * room. */
struct roundtrim_json {
    struct roundtrim_text text;
    bool need_comma;
};

void roundtrim_json_begin(struct roundtrim_json *j, char *buf, size_t cap);
void roundtrim_json_u64(struct roundtrim_json *j, const char *key, uint64_t v);
void roundtrim_json_i64(struct roundtrim_json *j, const char *key, int64_t v);
void roundtrim_json_str(struct roundtrim_json *j, const char *key, const char *v);
void roundtrim_json_bool(struct roundtrim_json *j, const char *key, bool v);
void roundtrim_json_ts(struct roundtrim_json *j, const char *key, double seconds);
/* part as a percentage of whole with two decimals (12.34); null when whole is 0. */
void roundtrim_json_percent(struct roundtrim_json *j, const char *key, uint64_t part,
                            uint64_t whole);
void roundtrim_json_object_begin(struct roundtrim_json *j, const char *key);
void roundtrim_json_object_end(struct roundtrim_json *j);
void roundtrim_json_array_begin(struct roundtrim_json *j, const char *key);
void roundtrim_json_array_str(struct roundtrim_json *j, const char *v);
void roundtrim_json_array_end(struct roundtrim_json *j);
/* An array element written before (a complete JSON value, copied as it is). */
void roundtrim_json_raw(struct roundtrim_json *j, const char *text, size_t len);
/* Closes the object and appends a newline; returns the length, or 0 when it did not fit. */
size_t roundtrim_json_end(struct roundtrim_json *j);

/* Starts a record: {"event":event,"pid":pid,"ts":ts */
void roundtrim_json_event_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                int pid, double ts);

#endif
