#include "policy/json_writer.h"

#include <inttypes.h>
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

void roundtrim_json_event_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                int pid, double ts)
{
    roundtrim_json_begin(j, buf, cap);
    roundtrim_json_str(j, "event", event);
    roundtrim_json_i64(j, "pid", pid);
    roundtrim_json_ts(j, "ts", ts);
}
