/* Random and mutated input through every parser of policy/, under AddressSanitizer and UBSan:
 * no crash, no overflow, and the invariants each parser promises. A fixed seed keeps failures
 * reproducible; ROUNDTRIM_FUZZ_ITERATIONS runs it longer. */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "env_fixture.h"
#include "policy/options.h"
#include "policy/parse.h"
#include "policy/procfs.h"
#include "policy/cleanup_actions.h"
#include "policy/json_writer.h"
#include "run_suite.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Text built from pieces the parsers care about, plus random bytes. */
static void random_text(char *buf, size_t cap)
{
    static const char *const pieces[] = {"0",
                                         "9",
                                         "18446744073709551615",
                                         "-",
                                         " ",
                                         "\t",
                                         "max",
                                         "kB",
                                         ":",
                                         "\n",
                                         "%p",
                                         "%%",
                                         "%",
                                         "SIG",
                                         "usr1",
                                         "RTMIN",
                                         "rtmax",
                                         "+",
                                         "none",
                                         "VmHWM",
                                         "MemTotal",
                                         "memory",
                                         "0::",
                                         "glibc.malloc.",
                                         "=",
                                         "true",
                                         "1e9",
                                         "\"",
                                         "\\",
                                         "\x7f",
                                         "\xc3\xa9", /* é */
                                         "\x80",
                                         "\xed\xa0\x80", /* surrogate */
                                         "\xe2\x82",
                                         "\xf0\x9f\x98\x80",
                                         "\xc0\xaf"};
    size_t len = 0, parts = next() % 12;
    for (size_t i = 0; i < parts; i++) {
        const char *p;
        char byte[2] = {(char)(1 + next() % 255), 0};
        p = (next() % 4 == 0) ? byte : pieces[next() % (sizeof pieces / sizeof pieces[0])];
        size_t n = strlen(p);
        if (len + n + 1 >= cap)
            break;
        memcpy(buf + len, p, n);
        len += n;
    }
    buf[len] = '\0';
}

static long iterations(void)
{
    const char *v = getenv("ROUNDTRIM_FUZZ_ITERATIONS");
    return v ? atol(v) : 20000;
}

START_TEST(parsers_survive_random_text)
{
    char text[256], out[64];
    for (long i = 0; i < iterations(); i++) {
        random_text(text, sizeof text);
        uint64_t v = 0, max = next() % 1000;
        if (roundtrim_parse_uint(text, 3, max, &v))
            ck_assert(v >= 3 && v <= max);
        bool b;
        roundtrim_parse_bool(text, &b);
        int sig = -1;
        if (roundtrim_parse_signal(text, &sig))
            ck_assert(sig == 0 || roundtrim_signal_name(sig) ||
                      (sig >= SIGRTMIN && sig <= SIGRTMAX));
        roundtrim_tunables_set(text, "glibc.malloc.arena_max");
        roundtrim_parse_kb_field(text, "VmHWM", &v);
        roundtrim_parse_statm_resident(text, 4096, &v);
        roundtrim_parse_cgroup_limit(text, &v);
        roundtrim_parse_cgroup_usage(text, &v);
        if (roundtrim_cgroup_dir_from_proc(text, out, sizeof out))
            ck_assert(strncmp(out, "/sys/fs/cgroup", 14) == 0 && strlen(out) < sizeof out);
        size_t cap = next() % sizeof out;
        if (roundtrim_expand_path(text, (int)(next() % 100000), "host", out, cap))
            ck_assert(strlen(out) < cap);
        roundtrim_safe_host_name(text, out, cap);
        ck_assert(cap == 0 || (strlen(out) < cap && !strchr(out, '/') && out[0] != '.'));
    }
}
END_TEST

START_TEST(config_survives_random_environments)
{
    static char values[RT_OPT_COUNT][128];
    const char *env[2 * RT_OPT_COUNT + 1];
    for (long i = 0; i < iterations() / 10; i++) {
        size_t n = 0;
        for (int id = 0; id < RT_OPT_COUNT; id++) {
            if (next() % 2)
                continue;
            random_text(values[id], sizeof values[id]);
            env[n++] = next() % 5 == 0 && roundtrim_options[id].alias ? roundtrim_options[id].alias
                                                                      : roundtrim_options[id].name;
            env[n++] = values[id];
        }
        env[n] = NULL;
        struct roundtrim_config cfg;
        roundtrim_config_load(&cfg, fake_env, env);
        ck_assert_uint_le(cfg.warning_count, ROUNDTRIM_MAX_WARNINGS);
        ck_assert_uint_le(cfg.pressure_warn, 100);
        ck_assert_uint_ge(cfg.sample_ms, 10);
        for (unsigned w = 0; w < cfg.warning_count; w++)
            ck_assert_uint_lt(strlen(cfg.warnings[w]), ROUNDTRIM_WARNING_LEN);
        char text[512], record[2048];
        for (int id = 0; id < RT_OPT_COUNT; id++) {
            roundtrim_config_value_text(&cfg, (enum roundtrim_option_id)id, text, sizeof text);
            /* as the start record copies it: one line, whatever the environment held */
            struct roundtrim_json j;
            roundtrim_json_begin(&j, record, sizeof record);
            roundtrim_json_str(&j, roundtrim_options[id].name, text);
            size_t n = roundtrim_json_end(&j);
            ck_assert_uint_gt(n, 0);
            ck_assert_ptr_eq(strchr(record, '\n'), record + n - 1);
        }
    }
}
END_TEST

START_TEST(json_output_stays_inside_its_buffer)
{
    char text[256], buf[300];
    for (long i = 0; i < iterations(); i++) {
        random_text(text, sizeof text);
        size_t cap = next() % sizeof buf;
        struct roundtrim_json j;
        roundtrim_json_begin(&j, buf, cap);
        roundtrim_json_str(&j, text, text);
        roundtrim_json_u64(&j, "n", next());
        roundtrim_json_actions(&j, "cleanup", (unsigned)next());
        size_t n = roundtrim_json_end(&j);
        if (n > 0) {
            ck_assert_uint_lt(n, cap);
            ck_assert_uint_eq(strlen(buf), n);
            ck_assert(buf[n - 1] == '\n');
        }
    }
}
END_TEST

/* Test-side UTF-8 check, written apart from the library's: length of the sequence at p or 0. */
static size_t utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
    if (n == 0 || p[0] > 0xf4)
        return 0;
    uint32_t cp = p[0] & (0xff >> (n + 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
        return 0;
    return n;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80)
        return (size_t)(out[0] = (char)cp, 1);
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    out[0] = (char)(0xe0 | cp >> 12);
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
}

/* Decodes the JSON string starting at the quote *s; returns the position after it, or NULL. */
static const char *json_string_decode(const char *s, char *out, size_t cap)
{
    size_t len = 0;
    if (*s++ != '"')
        return NULL;
    while (*s != '"') {
        if (*s == '\0' || (unsigned char)*s < 0x20 || len + 4 >= cap)
            return NULL;
        if (*s != '\\') {
            out[len++] = *s++;
            continue;
        }
        s++;
        if (*s == '"' || *s == '\\') {
            out[len++] = *s++;
        } else if (*s == 'u') {
            char hex[5] = {0};
            memcpy(hex, s + 1, 4);
            char *end;
            uint32_t cp = (uint32_t)strtoul(hex, &end, 16);
            if (end != hex + 4)
                return NULL;
            len += put_utf8(out + len, cp);
            s += 5;
        } else {
            return NULL;
        }
    }
    out[len] = '\0';
    return s + 1;
}

/* Whatever bytes a value holds, its record is one line of valid UTF-8 that decodes back to the
 * value (with U+FFFD for each byte that was not well-formed UTF-8). */
START_TEST(json_strings_are_one_valid_line_for_any_bytes)
{
    char text[256], buf[2048], back[1024], want[1024];
    for (long i = 0; i < iterations(); i++) {
        random_text(text, sizeof text);
        struct roundtrim_json j;
        roundtrim_json_begin(&j, buf, sizeof buf);
        roundtrim_json_str(&j, "v", text);
        size_t n = roundtrim_json_end(&j);
        ck_assert_uint_gt(n, 0);
        ck_assert_ptr_eq(strchr(buf, '\n'), buf + n - 1);
        for (const unsigned char *p = (const unsigned char *)buf; *p;) {
            size_t k = utf8_len(p);
            ck_assert_uint_gt(k, 0);
            ck_assert(*p >= 0x20 || *p == '\n');
            ck_assert(*p != 0x7f);
            p += k;
        }
        ck_assert(strncmp(buf, "{\"v\":", 5) == 0);
        const char *end = json_string_decode(buf + 5, back, sizeof back);
        ck_assert_ptr_nonnull(end);
        ck_assert_str_eq(end, "}\n");
        size_t w = 0;
        for (const unsigned char *p = (const unsigned char *)text; *p;) {
            size_t k = utf8_len(p);
            if (k == 0) {
                w += put_utf8(want + w, 0xfffd);
                p++;
            } else {
                memcpy(want + w, p, k);
                w += k;
                p += k;
            }
        }
        want[w] = '\0';
        ck_assert_str_eq(back, want);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("fuzz");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parsers_survive_random_text);
    tcase_add_test(tc, config_survives_random_environments);
    tcase_add_test(tc, json_output_stays_inside_its_buffer);
    tcase_add_test(tc, json_strings_are_one_valid_line_for_any_bytes);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
