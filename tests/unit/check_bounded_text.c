/* The bounded writer behind the round record and the metrics file: it never writes past the
 * buffer it was given, a text that fills it exactly fits, one byte more does not, and once
 * something did not fit nothing more is written and the result is 0. Values from the
 * environment or file names must come out as one valid JSON string or label value. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "policy/bounded_text.h"
#include "run_suite.h"

/* Writes s into a buffer of cap bytes with guard bytes after it; returns roundtrim_text_end. */
static size_t write_into(char *buf, size_t cap, const char *s)
{
    memset(buf, 'G', cap + 8);
    struct roundtrim_text t;
    roundtrim_text_begin(&t, buf, cap);
    roundtrim_text_printf(&t, "%s", s);
    for (size_t i = cap; i < cap + 8; i++)
        ck_assert_int_eq(buf[i], 'G');
    return roundtrim_text_end(&t);
}

START_TEST(exact_fill_fits_and_one_more_byte_does_not)
{
    char buf[16 + 8];
    ck_assert_uint_eq(write_into(buf, 16, "0123456789abcde"), 15); /* 15 bytes and the NUL */
    ck_assert_str_eq(buf, "0123456789abcde");
    ck_assert_uint_eq(write_into(buf, 16, "0123456789abcdef"), 0);
    ck_assert_str_eq(buf, ""); /* the cut text is not left behind */
    ck_assert_uint_eq(write_into(buf, 0, "x"), 0);
    ck_assert_int_eq(buf[0], 'G'); /* no room: not even the NUL */
}
END_TEST

START_TEST(after_overflow_nothing_more_is_written)
{
    char buf[8];
    struct roundtrim_text t;
    roundtrim_text_begin(&t, buf, sizeof buf);
    roundtrim_text_bytes(&t, "abc", 3);
    roundtrim_text_bytes(&t, "defgh", 5); /* 3 + 5 + NUL > 8: none of it */
    ck_assert(t.overflow);
    ck_assert_str_eq(buf, "abc");
    roundtrim_text_bytes(&t, "d", 1); /* would fit, but the text is already incomplete */
    ck_assert_str_eq(buf, "abc");
    ck_assert_uint_eq(roundtrim_text_end(&t), 0);
}
END_TEST

START_TEST(integers_and_fixed_point)
{
    char buf[128];
    struct roundtrim_text t;
    roundtrim_text_begin(&t, buf, sizeof buf);
    roundtrim_text_u64(&t, UINT64_MAX);
    roundtrim_text_bytes(&t, " ", 1);
    roundtrim_text_i64(&t, INT64_MIN);
    roundtrim_text_bytes(&t, " ", 1);
    roundtrim_text_micro(&t, 1000250);
    roundtrim_text_bytes(&t, " ", 1);
    roundtrim_text_micro(&t, 7);
    roundtrim_text_printf(&t, " %.3f", 1700000000.1234);
    ck_assert_str_eq(buf, "18446744073709551615 -9223372036854775808 1.000250 0.000007 "
                          "1700000000.123");
    ck_assert_uint_eq(roundtrim_text_end(&t), strlen(buf));
}
END_TEST

START_TEST(json_strings_are_escaped_and_valid_utf8)
{
    char buf[128];
    struct roundtrim_text t;
    roundtrim_text_begin(&t, buf, sizeof buf);
    roundtrim_text_json_string(&t, "a\"b\\c\n\x01\x7f h\xc3\xa9 \xff\xc3");
    ck_assert_str_eq(buf, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f h\xc3\xa9 \\ufffd\\ufffd\"");
    /* A string that does not fit leaves the whole text incomplete. */
    char small[6];
    roundtrim_text_begin(&t, small, sizeof small);
    roundtrim_text_json_string(&t, "abcdef");
    ck_assert_uint_eq(roundtrim_text_end(&t), 0);
}
END_TEST

START_TEST(label_values_are_escaped_and_cut_at_a_whole_character)
{
    char buf[64];
    struct roundtrim_text t;
    roundtrim_text_begin(&t, buf, sizeof buf);
    roundtrim_text_label_value(&t, "py\"th\\on\n\x01\xe2\x82");
    ck_assert_str_eq(buf, "py\\\"th\\\\on\\n\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    /* "h\xc3\xa9" in 3 bytes of room (2 and the NUL): the character is left out whole. */
    char small[3];
    roundtrim_text_begin(&t, small, sizeof small);
    roundtrim_text_label_value(&t, "h\xc3\xa9");
    ck_assert_str_eq(small, "h");
    roundtrim_text_begin(&t, buf, sizeof buf);
    roundtrim_text_label_value(&t, NULL);
    ck_assert_str_eq(buf, "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bounded_text");
    TCase *tc = tcase_create("bounded_text");
    tcase_add_test(tc, exact_fill_fits_and_one_more_byte_does_not);
    tcase_add_test(tc, after_overflow_nothing_more_is_written);
    tcase_add_test(tc, integers_and_fixed_point);
    tcase_add_test(tc, json_strings_are_escaped_and_valid_utf8);
    tcase_add_test(tc, label_values_are_escaped_and_cut_at_a_whole_character);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
