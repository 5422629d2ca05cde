/* Text written into a caller's buffer: never past its end, always NUL-terminated, and it
 * remembers when something did not fit (then nothing more is written). The round record's JSON
 * and the Prometheus text are written with it. */
#ifndef ROUNDTRIM_POLICY_BOUNDED_TEXT_H
#define ROUNDTRIM_POLICY_BOUNDED_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct roundtrim_text {
    char *buf;
    size_t cap, len; /* buf[len] is '\0' whenever cap > 0 */
    bool overflow;   /* something did not fit: buf holds what came before it */
};

void roundtrim_text_begin(struct roundtrim_text *t, char *buf, size_t cap);
void roundtrim_text_printf(struct roundtrim_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* n bytes as they are: all of them, or none and overflow. */
void roundtrim_text_bytes(struct roundtrim_text *t, const char *s, size_t n);
void roundtrim_text_u64(struct roundtrim_text *t, uint64_t v);
void roundtrim_text_i64(struct roundtrim_text *t, int64_t v);
/* micro as seconds with six decimals (1.000250), without floating point. */
void roundtrim_text_micro(struct roundtrim_text *t, uint64_t micro);
/* s as one JSON string: quotes, backslashes and control bytes escaped, every byte that is not
 * part of well-formed UTF-8 written as U+FFFD. */
void roundtrim_text_json_string(struct roundtrim_text *t, const char *s);
/* s as a Prometheus label value (without its quotes): backslash, quote and newline escaped,
 * every other control byte and every byte not part of well-formed UTF-8 written as U+FFFD. */
void roundtrim_text_label_value(struct roundtrim_text *t, const char *s);
/* The length written, or 0 when something did not fit. */
size_t roundtrim_text_end(const struct roundtrim_text *t);

#endif
