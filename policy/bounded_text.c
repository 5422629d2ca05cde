#include "policy/bounded_text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/utf8.h"

void roundtrim_text_begin(struct roundtrim_text *t, char *buf, size_t cap)
{
    t->buf = buf;
    t->cap = cap;
    t->len = 0;
    t->overflow = cap == 0;
    if (cap > 0)
        buf[0] = '\0';
}

void roundtrim_text_printf(struct roundtrim_text *t, const char *fmt, ...)
{
    if (t->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->cap - t->len) {
        t->overflow = true;
        t->buf[t->len] = '\0'; /* what vsnprintf cut off is not kept */
        return;
    }
    t->len += (size_t)n;
}

void roundtrim_text_bytes(struct roundtrim_text *t, const char *s, size_t n)
{
    if (t->overflow || n >= t->cap - t->len) {
        t->overflow = true;
        return;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void roundtrim_text_u64(struct roundtrim_text *t, uint64_t v)
{
    roundtrim_text_printf(t, "%" PRIu64, v);
}

void roundtrim_text_i64(struct roundtrim_text *t, int64_t v)
{
    roundtrim_text_printf(t, "%" PRId64, v);
}

void roundtrim_text_micro(struct roundtrim_text *t, uint64_t micro)
{
    roundtrim_text_printf(t, "%" PRIu64 ".%06" PRIu64, micro / 1000000u, micro % 1000000u);
}

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

void roundtrim_text_json_string(struct roundtrim_text *t, const char *s)
{
    roundtrim_text_bytes(t, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !t->overflow;) {
        size_t n = roundtrim_utf8_sequence(p);
        if (n == 0) {
            roundtrim_text_bytes(t, "\\ufffd", 6);
            p++;
        } else if (*p == '"' || *p == '\\') {
            roundtrim_text_printf(t, "\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            roundtrim_text_printf(t, "\\u%04x", *p++);
        } else {
            roundtrim_text_bytes(t, (const char *)p, n);
            p += n;
        }
    }
    roundtrim_text_bytes(t, "\"", 1);
}

void roundtrim_text_label_value(struct roundtrim_text *t, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p && !t->overflow;) {
        size_t n = roundtrim_utf8_sequence(p);
        if (*p == '\\')
            roundtrim_text_bytes(t, "\\\\", 2);
        else if (*p == '"')
            roundtrim_text_bytes(t, "\\\"", 2);
        else if (*p == '\n')
            roundtrim_text_bytes(t, "\\n", 2);
        else if (n == 0 || *p < 0x20 || *p == 0x7f)
            roundtrim_text_bytes(t, REPLACEMENT, sizeof REPLACEMENT - 1);
        else
            roundtrim_text_bytes(t, (const char *)p, n);
        p += n ? n : 1;
    }
}

size_t roundtrim_text_end(const struct roundtrim_text *t)
{
    return t->overflow ? 0 : t->len;
}
