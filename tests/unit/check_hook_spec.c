/* ROUNDTRIM_PY_HOOK's text: the names kept, auto and off, every warning line as the user reads it
 * (after roundtrim's "roundtrim: " prefix), the limits, and hostile input under AddressSanitizer
 * and UBSan. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy/hook_spec.h"
#include "policy/sample_math.h"
#include "run_suite.h"

#define PREFIX "ROUNDTRIM_PY_HOOK: ignoring \""

/* The warning lines of one parse: all counted, the first few kept. */
struct warnings {
    unsigned count;
    char line[24][400];
};

static void collect(void *ctx, const char *line)
{
    struct warnings *w = ctx;
    if (w->count < sizeof w->line / sizeof w->line[0])
        snprintf(w->line[w->count], sizeof w->line[0], "%s", line);
    w->count++;
}

static struct roundtrim_hook_spec spec;
static struct warnings warned;

static size_t parse(const char *text)
{
    memset(&warned, 0, sizeof warned);
    /* Whatever was there before is overwritten. */
    memset(&spec, 0xa5, sizeof spec);
    return roundtrim_hook_spec_parse(text, &spec, collect, &warned);
}

static void assert_name(size_t i, const char *module, const char *qualname)
{
    ck_assert_uint_lt(i, spec.count);
    ck_assert_str_eq(spec.names[i].module, module);
    ck_assert_str_eq(spec.names[i].qualname, qualname);
}

static void assert_quiet(void)
{
    ck_assert_msg(warned.count == 0, "unexpected warning: %s", warned.line[0]);
}

START_TEST(unset_or_empty_means_the_framework_table)
{
    ck_assert_uint_eq(parse(NULL), 0);
    ck_assert(spec.with_auto && !spec.off);
    ck_assert_str_eq(roundtrim_hook_spec_mode(&spec), "auto");
    assert_quiet();
    ck_assert_uint_eq(parse(""), 0);
    ck_assert(spec.with_auto && !spec.off);
    assert_quiet();
}
END_TEST

/* Valid specs and the names kept, in order. */
static const struct {
    const char *spec;
    size_t count;
    const char *names[4][2];
} valid_specs[] = {
    {"mypkg.train:run_round", 1, {{"mypkg.train", "run_round"}}},
    {"a.b.c:Cls.Inner.meth,_:_,m1:f2,M_9.x:__init__",
     4,
     {{"a.b.c", "Cls.Inner.meth"}, {"_", "_"}, {"m1", "f2"}, {"M_9.x", "__init__"}}},
    /* Blanks around an item are dropped. */
    {" \tm:f \t,\tn.o:g  ", 2, {{"m", "f"}, {"n.o", "g"}}},
    /* Keywords and dunder names are valid dotted names: the runtime finds out they are not
     * there. */
    {"class:def,__main__:main", 2, {{"class", "def"}, {"__main__", "main"}}},
};

START_TEST(names_are_split_at_the_colon)
{
    ck_assert_uint_eq(parse(valid_specs[_i].spec), valid_specs[_i].count);
    for (size_t i = 0; i < valid_specs[_i].count; i++)
        assert_name(i, valid_specs[_i].names[i][0], valid_specs[_i].names[i][1]);
    ck_assert(!spec.with_auto && !spec.off);
    ck_assert_str_eq(roundtrim_hook_spec_mode(&spec), "names");
    assert_quiet();
}
END_TEST

START_TEST(auto_adds_the_table_to_the_names)
{
    ck_assert_uint_eq(parse("auto,m:f"), 1);
    ck_assert(spec.with_auto);
    assert_name(0, "m", "f");
    ck_assert_str_eq(roundtrim_hook_spec_mode(&spec), "auto+names");
    ck_assert_uint_eq(parse("m:f , auto"), 1);
    ck_assert(spec.with_auto);
    ck_assert_uint_eq(parse("auto"), 0);
    ck_assert(spec.with_auto);
    ck_assert_str_eq(roundtrim_hook_spec_mode(&spec), "auto");
    /* Said twice is said once; no warning. */
    ck_assert_uint_eq(parse(" auto ,\tauto"), 0);
    ck_assert(spec.with_auto);
    assert_quiet();
}
END_TEST

static const char *const off_specs[] = {"none", "off", " none ", "\toff\t", " \t none"};

START_TEST(none_or_off_alone_turns_hooks_off)
{
    ck_assert_uint_eq(parse(off_specs[_i]), 0);
    ck_assert(spec.off && !spec.with_auto);
    ck_assert_str_eq(roundtrim_hook_spec_mode(&spec), "none");
    assert_quiet();
}
END_TEST

/* With other items, or in another case, "none" is an item like any other. */
START_TEST(none_among_items_is_just_a_bad_item)
{
    ck_assert_uint_eq(parse("none,m:f"), 1);
    ck_assert(!spec.off);
    assert_name(0, "m", "f");
    ck_assert_uint_eq(warned.count, 1);
    ck_assert_str_eq(warned.line[0], PREFIX "none\": expected module:qualname");

    ck_assert_uint_eq(parse("none,"), 0);
    ck_assert(!spec.off && !spec.with_auto);
    ck_assert_uint_eq(warned.count, 1);

    ck_assert_uint_eq(parse("NONE"), 0);
    ck_assert(!spec.off);
    ck_assert_str_eq(warned.line[0], PREFIX "NONE\": expected module:qualname");
    ck_assert_uint_eq(parse("Off"), 0);
    ck_assert(!spec.off);
    ck_assert_uint_eq(parse("AUTO"), 0);
    ck_assert(!spec.with_auto);
    ck_assert_str_eq(warned.line[0], PREFIX "AUTO\": expected module:qualname");
}
END_TEST

static const char *const empty_specs[] = {",", " ", "\t", ",,", " , ,\t,", ",,,,,,,,,,,,,,,,,,,,"};

/* Blanks and commas only: not unset, so not auto; nothing to hook and nothing to warn about. */
START_TEST(blanks_and_commas_alone_hook_nothing)
{
    ck_assert_uint_eq(parse(empty_specs[_i]), 0);
    ck_assert(!spec.with_auto && !spec.off);
    assert_quiet();
}
END_TEST

/* Each bad item and the line the user reads about it (the blanks around the item dropped). */
static const struct {
    const char *spec;
    const char *line;
} bad[] = {
    {"nocolon", PREFIX "nocolon\": expected module:qualname"},
    {" mypkg.train ", PREFIX "mypkg.train\": expected module:qualname"},
    {" 1bad:x ", PREFIX "1bad:x\": expected module:qualname (dotted Python names)"},
    {":", PREFIX ":\": expected module:qualname (dotted Python names)"},
    {":f", PREFIX ":f\": expected module:qualname (dotted Python names)"},
    {"m:", PREFIX "m:\": expected module:qualname (dotted Python names)"},
    {"m::f", PREFIX "m::f\": expected module:qualname (dotted Python names)"},
    {"m:f:g", PREFIX "m:f:g\": expected module:qualname (dotted Python names)"},
    {".m:f", PREFIX ".m:f\": expected module:qualname (dotted Python names)"},
    {"m.:f", PREFIX "m.:f\": expected module:qualname (dotted Python names)"},
    {"m..n:f", PREFIX "m..n:f\": expected module:qualname (dotted Python names)"},
    {"m:.f", PREFIX "m:.f\": expected module:qualname (dotted Python names)"},
    {"m:f.", PREFIX "m:f.\": expected module:qualname (dotted Python names)"},
    {"m:f..g", PREFIX "m:f..g\": expected module:qualname (dotted Python names)"},
    {".:.", PREFIX ".:.\": expected module:qualname (dotted Python names)"},
    {"m:1f", PREFIX "m:1f\": expected module:qualname (dotted Python names)"},
    {"m.1x:f", PREFIX "m.1x:f\": expected module:qualname (dotted Python names)"},
    {"my-pkg:f", PREFIX "my-pkg:f\": expected module:qualname (dotted Python names)"},
    {"m:f()", PREFIX "m:f()\": expected module:qualname (dotted Python names)"},
    {"m/x.py:f", PREFIX "m/x.py:f\": expected module:qualname (dotted Python names)"},
    /* Blanks inside an item are not dropped. */
    {"m :f", PREFIX "m :f\": expected module:qualname (dotted Python names)"},
    {"m: f", PREFIX "m: f\": expected module:qualname (dotted Python names)"},
    {"m:f g", PREFIX "m:f g\": expected module:qualname (dotted Python names)"},
    /* Only spaces and tabs are blanks: a newline stays in the item (roundtrim_warn prints it as
     * '?', one warning one line). */
    {"m:f\n", PREFIX "m:f\n\": expected module:qualname (dotted Python names)"},
    {"\rm:f", PREFIX "\rm:f\": expected module:qualname (dotted Python names)"},
    /* Python allows non-ASCII identifiers; the spec does not. */
    {"m\xc3\xb3"
     "dulo:f",
     PREFIX "m\xc3\xb3"
            "dulo:f\": expected module:qualname (dotted Python names)"},
    {"m:f\xe2\x82\xac", PREFIX "m:f\xe2\x82\xac\": expected module:qualname (dotted Python names)"},
    {"m:\xff", PREFIX "m:\xff\": expected module:qualname (dotted Python names)"},
    {"\"m\":f", PREFIX "\"m\":f\": expected module:qualname (dotted Python names)"},
    {"m:%s%n", PREFIX "m:%s%n\": expected module:qualname (dotted Python names)"},
};

START_TEST(each_bad_item_gets_one_line)
{
    ck_assert_uint_eq(parse(bad[_i].spec), 0);
    ck_assert(!spec.off && !spec.with_auto);
    ck_assert_uint_eq(warned.count, 1);
    ck_assert_str_eq(warned.line[0], bad[_i].line);
}
END_TEST

/* The integration test's spec: the bad items warned about in order, the good one kept. */
START_TEST(bad_items_leave_the_good_ones)
{
    ck_assert_uint_eq(parse("nocolon, hook_target:round_fn ,1bad:x,hook_target:missing,,"), 2);
    assert_name(0, "hook_target", "round_fn");
    assert_name(1, "hook_target", "missing"); /* whether it exists is the runtime's business */
    ck_assert_uint_eq(warned.count, 2);
    ck_assert_str_eq(warned.line[0], PREFIX "nocolon\": expected module:qualname");
    ck_assert_str_eq(warned.line[1],
                     PREFIX "1bad:x\": expected module:qualname (dotted Python names)");
}
END_TEST

static void fill(char *buf, size_t n, char c)
{
    memset(buf, c, n);
    buf[n] = 0;
}

START_TEST(longest_names_are_kept)
{
    char module[ROUNDTRIM_HOOK_NAME_MAX], qualname[ROUNDTRIM_HOOK_NAME_MAX];
    char text[2 * ROUNDTRIM_HOOK_NAME_MAX + 8];
    fill(module, ROUNDTRIM_HOOK_NAME_MAX - 1, 'm');
    fill(qualname, ROUNDTRIM_HOOK_NAME_MAX - 1, 'q');
    for (size_t i = 1; i + 1 < ROUNDTRIM_HOOK_NAME_MAX - 1; i += 2)
        qualname[i] = '.'; /* q.q.q...q: dots count as bytes too */
    snprintf(text, sizeof text, "%s:%s", module, qualname);
    ck_assert_uint_eq(strlen(text) + 1, ROUNDTRIM_HOOK_TARGET_MAX);
    ck_assert_uint_eq(parse(text), 1);
    assert_name(0, module, qualname);
    assert_quiet();
}
END_TEST

START_TEST(one_byte_longer_is_too_long)
{
    char module[ROUNDTRIM_HOOK_NAME_MAX + 1], text[ROUNDTRIM_HOOK_NAME_MAX + 16];
    char want[400];
    fill(module, ROUNDTRIM_HOOK_NAME_MAX, 'm');
    snprintf(text, sizeof text, "%s:f", module);
    ck_assert_uint_eq(parse(text), 0);
    ck_assert_uint_eq(warned.count, 1);
    snprintf(want, sizeof want, PREFIX "%s\": name too long", text);
    ck_assert_str_eq(warned.line[0], want);

    snprintf(text, sizeof text, "f:%s", module);
    ck_assert_uint_eq(parse(text), 0);
    snprintf(want, sizeof want, PREFIX "%s\": name too long", text);
    ck_assert_str_eq(warned.line[0], want);
}
END_TEST

START_TEST(most_names_then_too_many)
{
    char text[1024] = "";
    size_t len = 0;
    for (int i = 0; i < ROUNDTRIM_HOOK_SPEC_MAX + 1; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "m%d:f%d,", i, i);
    /* Past the limit the other checks still come first, and auto still counts. */
    len += (size_t)snprintf(text + len, sizeof text - len, "1bad:x,a:");
    fill(text + len, ROUNDTRIM_HOOK_NAME_MAX, 'q');
    len += ROUNDTRIM_HOOK_NAME_MAX;
    snprintf(text + len, sizeof text - len, ",auto");
    ck_assert_uint_eq(parse(text), ROUNDTRIM_HOOK_SPEC_MAX);
    for (int i = 0; i < ROUNDTRIM_HOOK_SPEC_MAX; i++) {
        char m[16], f[16];
        snprintf(m, sizeof m, "m%d", i);
        snprintf(f, sizeof f, "f%d", i);
        assert_name((size_t)i, m, f);
    }
    ck_assert(spec.with_auto);
    ck_assert_uint_eq(warned.count, 3);
    ck_assert_str_eq(warned.line[0], PREFIX "m16:f16\": too many entries");
    ck_assert_str_eq(warned.line[1],
                     PREFIX "1bad:x\": expected module:qualname (dotted Python names)");
    ck_assert_int_eq(strncmp(warned.line[2], PREFIX "a:qqq", strlen(PREFIX "a:qqq")), 0);
    ck_assert_ptr_nonnull(strstr(warned.line[2], "q\": name too long"));
}
END_TEST

START_TEST(a_name_given_twice_is_kept_twice)
{
    ck_assert_uint_eq(parse("m:f,m:f, m:f"), 3);
    for (size_t i = 0; i < 3; i++)
        assert_name(i, "m", "f");
    assert_quiet();
}
END_TEST

/* A very long item is quoted up to ROUNDTRIM_HOOK_WARN_QUOTE_MAX bytes. */
START_TEST(long_items_are_quoted_cut)
{
    static char text[20000], want[400];
    fill(text, 10000, 'x');
    ck_assert_uint_eq(parse(text), 0);
    ck_assert_uint_eq(warned.count, 1);
    snprintf(want, sizeof want, PREFIX "%.*s\": expected module:qualname",
             ROUNDTRIM_HOOK_WARN_QUOTE_MAX, text);
    ck_assert_str_eq(warned.line[0], want);

    text[0] = 'a';
    text[1] = ':';
    ck_assert_uint_eq(parse(text), 0);
    snprintf(want, sizeof want, PREFIX "%.*s\": name too long", ROUNDTRIM_HOOK_WARN_QUOTE_MAX,
             text);
    ck_assert_str_eq(warned.line[0], want);

    /* Blanks around it do not count against the quote. */
    memset(text, ' ', 5000);
    memcpy(text + 5000, "m:", 2);
    ck_assert_uint_eq(parse(text), 0);
    ck_assert_ptr_nonnull(strstr(warned.line[0], PREFIX "m:xxx"));
}
END_TEST

START_TEST(thousands_of_items)
{
    static char text[1000 * 12];
    size_t len = 0;
    for (int i = 0; i < 1000; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "m%d:f,", i);
    ck_assert_uint_eq(parse(text), ROUNDTRIM_HOOK_SPEC_MAX);
    assert_name(ROUNDTRIM_HOOK_SPEC_MAX - 1, "m15", "f");
    ck_assert_uint_eq(warned.count, 1000 - ROUNDTRIM_HOOK_SPEC_MAX);
    ck_assert_str_eq(warned.line[0], PREFIX "m16:f\": too many entries");
}
END_TEST

START_TEST(no_warning_callback_is_fine)
{
    struct roundtrim_hook_spec s;
    ck_assert_uint_eq(roundtrim_hook_spec_parse("nocolon,1:x,m:f,auto", &s, NULL, NULL), 1);
    ck_assert_str_eq(s.names[0].module, "m");
    ck_assert(s.with_auto);
}
END_TEST

START_TEST(warning_line_is_cut_safely)
{
    char buf[400];
    roundtrim_hook_spec_warning(buf, sizeof buf, "m:f and more", 3, "no such attribute");
    ck_assert_str_eq(buf, PREFIX "m:f\": no such attribute");
    roundtrim_hook_spec_warning(buf, sizeof buf, "", 0, "why");
    ck_assert_str_eq(buf, PREFIX "\": why");
    /* The runtime quotes a full "module:qualname", longer than the parser's cut. */
    char target[ROUNDTRIM_HOOK_TARGET_MAX];
    fill(target, sizeof target - 1, 't');
    roundtrim_hook_spec_warning(buf, sizeof buf, target, strlen(target), "failed");
    ck_assert_uint_eq(strlen(buf), strlen(PREFIX) + strlen(target) + strlen("\": failed"));
    char small[12];
    memset(small, 'z', sizeof small);
    roundtrim_hook_spec_warning(small, sizeof small, "m:f", 3, "why");
    ck_assert_str_eq(small, "ROUNDTRIM_P");
    roundtrim_hook_spec_warning(NULL, 0, "m:f", 3, "why");
}
END_TEST

/* Random specs built from the pieces that matter: whatever comes, the names kept are valid and
 * fit, every item is either kept, auto, or warned about once, and every line is bounded. */
static uint64_t rng = 0x243f6a8885a308d3ull; /* fixed: a failure reproduces */

static uint64_t next(void)
{
    return roundtrim_sample_random(&rng);
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || n >= ROUNDTRIM_HOOK_NAME_MAX || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool first = i == 0 || s[i - 1] == '.';
        bool ok = c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (!first && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Items that are neither empty nor "auto", counted the way the spec defines them. */
static size_t counted_items(const char *text)
{
    size_t items = 0;
    for (const char *p = text;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        while (n && is_blank(*s))
            s++, n--;
        while (n && is_blank(s[n - 1]))
            n--;
        if (n && !(n == 4 && memcmp(s, "auto", 4) == 0))
            items++;
        if (!end)
            return items;
        p = end + 1;
    }
}

START_TEST(random_specs_keep_the_invariants)
{
    static const char *const pieces[] = {
        "a",    "Z",    "_",   "7",     ".",
        ":",    ",",    ", ",  "\t",    " ",
        "auto", "none", "off", "m.n:f", "\xc3\xa9",
        "\xff", "\n",   "\"",  "%s",    "x234567890123456789012345678901234567890"};
    static char text[4096];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0, parts = next() % 40;
        for (size_t i = 0; i < parts; i++) {
            const char *p = pieces[next() % (sizeof pieces / sizeof pieces[0])];
            size_t reps = next() % 8 == 0 ? 1 + next() % 10 : 1;
            for (size_t r = 0; r < reps && len + strlen(p) + 1 < sizeof text; r++) {
                memcpy(text + len, p, strlen(p));
                len += strlen(p);
            }
        }
        text[len] = 0;
        size_t kept = parse(text);
        ck_assert_uint_eq(kept, spec.count);
        ck_assert_uint_le(kept, ROUNDTRIM_HOOK_SPEC_MAX);
        for (size_t i = 0; i < kept; i++) {
            ck_assert_msg(valid_name(spec.names[i].module), "spec \"%s\"", text);
            ck_assert_msg(valid_name(spec.names[i].qualname), "spec \"%s\"", text);
        }
        if (spec.off) {
            ck_assert(kept == 0 && warned.count == 0);
            continue;
        }
        ck_assert_uint_eq(kept + warned.count, counted_items(text));
        for (unsigned i = 0; i < warned.count && i < sizeof warned.line / sizeof warned.line[0];
             i++) {
            ck_assert_int_eq(strncmp(warned.line[i], PREFIX, strlen(PREFIX)), 0);
            ck_assert_uint_le(strlen(warned.line[i]),
                              strlen(PREFIX) + ROUNDTRIM_HOOK_WARN_QUOTE_MAX + 60);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hook_spec");
    TCase *valid = tcase_create("valid");
    tcase_add_test(valid, unset_or_empty_means_the_framework_table);
    tcase_add_loop_test(valid, names_are_split_at_the_colon, 0,
                        sizeof valid_specs / sizeof valid_specs[0]);
    tcase_add_test(valid, auto_adds_the_table_to_the_names);
    tcase_add_loop_test(valid, none_or_off_alone_turns_hooks_off, 0,
                        sizeof off_specs / sizeof off_specs[0]);
    suite_add_tcase(s, valid);

    TCase *warnings = tcase_create("warnings");
    tcase_add_test(warnings, none_among_items_is_just_a_bad_item);
    tcase_add_loop_test(warnings, blanks_and_commas_alone_hook_nothing, 0,
                        sizeof empty_specs / sizeof empty_specs[0]);
    tcase_add_loop_test(warnings, each_bad_item_gets_one_line, 0, sizeof bad / sizeof bad[0]);
    tcase_add_test(warnings, bad_items_leave_the_good_ones);
    tcase_add_test(warnings, no_warning_callback_is_fine);
    tcase_add_test(warnings, warning_line_is_cut_safely);
    suite_add_tcase(s, warnings);

    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, longest_names_are_kept);
    tcase_add_test(limits, one_byte_longer_is_too_long);
    tcase_add_test(limits, most_names_then_too_many);
    tcase_add_test(limits, a_name_given_twice_is_kept_twice);
    tcase_add_test(limits, long_items_are_quoted_cut);
    tcase_add_test(limits, thousands_of_items);
    tcase_add_test(limits, random_specs_keep_the_invariants);
    suite_add_tcase(s, limits);
    return run_suite(s);
}
