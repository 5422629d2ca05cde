/* The round record's JSON and the Prometheus text: what users parse and graph. */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/prom_format.h"
#include "policy/round_record.h"
#include "run_suite.h"

static struct roundtrim_round_record sample(void)
{
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    r.pid = 42;
    r.round = 7;
    r.ts = 1700000000.25;
    r.source = "signal";
    r.allocator = "glibc";
    r.traffic = (struct roundtrim_traffic){10, 9, 1000, 900, 0};
    r.heap_live_known = true;
    r.heap_live = 5000;
    r.rss_before = 300;
    r.rss_after = 200;
    r.rss_peak = 400;
    r.actions = RT_ACT_GC | RT_ACT_TRIM;
    r.cleanup_us = 12;
    r.trim_us = 5;
    r.gc_ran = true;
    r.gc_collected = 3;
    r.gc_us = 6;
    return r;
}

START_TEST(a_record_says_what_it_merged_and_why_its_cleanup_was_skipped)
{
    struct roundtrim_round_record r = sample();
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "merged_rounds"));
    ck_assert_ptr_null(strstr(buf, "cleanup_skipped"));
    r.round = 12;
    r.merged_rounds = 3;
    r.actions = 0;
    r.gc_ran = false;
    r.cleanup_us = 0;
    r.cleanup_skipped = RT_SKIP_exiting;
    r.gc_skipped = RT_SKIP_exiting;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"round\":12,\"merged_rounds\":3,"));
    ck_assert_ptr_nonnull(
        strstr(buf, "\"cleanup\":[],\"cleanup_us\":0,\"cleanup_skipped\":\"exiting\","));
    ck_assert_ptr_nonnull(strstr(buf, "\"gc_skipped\":\"exiting\""));
    r.heap_live_known = false;
    r.heap_live_skipped = RT_SKIP_exiting;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"heap_live\":null,\"heap_live_skipped\":\"exiting\","));
}
END_TEST

START_TEST(round_record_has_every_key_in_order)
{
    struct roundtrim_round_record r = sample();
    char buf[2048];
    size_t n = roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_uint_eq(n, strlen(buf));
    ck_assert_str_eq(buf,
                     "{\"event\":\"round\",\"pid\":42,\"round\":7,\"ts\":1700000000.250,"
                     "\"source\":\"signal\",\"malloc_calls\":10,\"free_calls\":9,"
                     "\"malloc_bytes\":1000,\"free_bytes\":900,\"heap_live\":5000,"
                     "\"rss_before\":300,\"rss_after\":200,\"rss_peak\":400,"
                     "\"memory\":{\"rss\":0,\"heap_live\":0,\"heap_free\":0,\"python\":0,"
                     "\"other_anon\":0,\"file\":0,\"shmem\":0,\"roundtrim\":0,\"device_live\":0,"
                     "\"device_cached\":0,\"over_rss\":0,\"read_us\":0},"
                     "\"mem_headroom_skipped\":\"limit_unread\","
                     "\"cleanup\":[\"gc\",\"trim\"],\"cleanup_us\":12,\"round_us\":0,"
                     "\"cleanup_cpu_us\":0,\"cleanup_cpu_percent\":null,\"trim_us\":5,"
                     "\"trim_released_bytes\":0,\"gc_collected\":3,\"gc_freed_bytes\":0,"
                     "\"gc_us\":6,\"allocator\":\"glibc\"}\n");
}
END_TEST

/* The top-level keys of a record, in order, into keys (each at most 47 bytes). */
static size_t top_keys(const char *json, char keys[][48], size_t max)
{
    size_t n = 0;
    int depth = 0;
    bool in_string = false, is_key = false;
    const char *start = NULL;
    for (const char *p = json; *p; p++) {
        if (in_string) {
            if (*p == '\\') {
                p++;
            } else if (*p == '"') {
                in_string = false;
                if (is_key && n < max)
                    snprintf(keys[n++], 48, "%.*s", (int)(p - start), start);
            }
        } else if (*p == '"') {
            in_string = true;
            start = p + 1;
            is_key = depth == 1 && (p[-1] == '{' || p[-1] == ',');
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            depth--;
        }
    }
    return n;
}

/* Two records, one in which every step ran and everything was read, one in which every step
 * was skipped and nothing could be read, write between them every key the field table
 * declares, in its order, and no other. */
START_TEST(every_declared_key_and_only_those_are_written)
{
    static const char *const declared[] = {
#define RT_FIELD(name, kind, unit, when, meaning, present, null_if, value) #name,
#include "policy/round_fields.def"
    };
    size_t n_declared = sizeof declared / sizeof declared[0];
    struct roundtrim_round_record ran = sample();
    ran.merged_rounds = 2;
    ran.hook = "m:f";
    ran.cgroup_known = true;
    ran.cgroup_limit = 1;
    ran.mem_headroom_of = RT_HEADROOM_CGROUP;
    ran.mem_headroom = 1;
    ran.actions = RT_ACT_GC | RT_ACT_TRIM | RT_ACT_TORCH_EMPTY_CACHE | RT_ACT_CUPY_FREE_BLOCKS |
                  RT_ACT_CUDA_POOL_TRIM;
    ran.trim_pause_predicted_us = ran.trim_held_back_rounds = ran.trim_holds = 1;
    ran.trim_steps = 1;
    ran.trim_retry = ran.trim_budget_cut = true;
    ran.signal_rounds_off = "program_set_default";
    ran.cuda.present = ran.cuda.have_mem_info = true;
    ran.cuda.host_live_bytes = 1;
    ran.holders_steps = ran.holders_gil_us = 1;
    struct roundtrim_round_record skipped = sample();
    skipped.counts_skipped = skipped.heap_live_skipped = RT_SKIP_allocator_before_roundtrim;
    skipped.heap_live_known = false;
    skipped.memory.skipped = skipped.cleanup_skipped = RT_SKIP_exiting;
    skipped.actions = 0;
    skipped.gc_ran = false;
    skipped.gc_skipped = skipped.trim_skipped = skipped.torch_empty_cache_skipped = RT_SKIP_exiting;
    skipped.cupy_free_blocks_skipped = skipped.cuda_pool_trim_skipped = RT_SKIP_exiting;
    skipped.cuda.present = true;
    skipped.cuda.mem_info_skipped = RT_SKIP_no_device;
    char buf[4096], keys[2][96][48];
    size_t n[2];
    ck_assert_uint_gt(roundtrim_round_record_format(&ran, buf, sizeof buf), 0);
    n[0] = top_keys(buf, keys[0], 96);
    ck_assert_uint_gt(roundtrim_round_record_format(&skipped, buf, sizeof buf), 0);
    n[1] = top_keys(buf, keys[1], 96);
    bool seen[96] = {false};
    for (int k = 0; k < 2; k++) {
        size_t at = 0; /* each record's keys come in the table's order */
        for (size_t i = 0; i < n[k]; i++) {
            while (at < n_declared && strcmp(declared[at], keys[k][i]) != 0)
                at++;
            ck_assert_msg(at < n_declared, "%s: not declared, or out of order", keys[k][i]);
            seen[at] = true;
        }
    }
    for (size_t i = 0; i < n_declared; i++)
        ck_assert_msg(seen[i], "%s is declared and never written", declared[i]);
}
END_TEST

START_TEST(hook_and_skips_of_what_the_program_did)
{
    struct roundtrim_round_record r = sample();
    r.source = "python";
    r.hook = "nvflare.client.api:send";
    r.actions = RT_ACT_TRIM;
    r.gc_ran = false;
    r.gc_skipped = RT_SKIP_program_gc;
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(
        strstr(buf, "\"source\":\"python\",\"hook\":\"nvflare.client.api:send\","));
    ck_assert_ptr_nonnull(strstr(buf, "\"cleanup\":[\"trim\"]"));
    ck_assert_ptr_nonnull(strstr(buf, "\"gc_skipped\":\"program_gc\""));
    ck_assert_ptr_null(strstr(buf, "trim_skipped"));
    r.actions = RT_ACT_GC;
    r.gc_ran = true;
    r.trim_skipped = RT_SKIP_program_trim;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"trim_skipped\":\"program_trim\""));
    ck_assert_ptr_null(strstr(buf, "trim_us"));
}
END_TEST

START_TEST(a_trim_in_holds_and_a_trim_held_back_say_so)
{
    struct roundtrim_round_record r = sample();
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "trim_holds"));
    ck_assert_ptr_null(strstr(buf, "trim_held_back_rounds"));
    ck_assert_ptr_null(strstr(buf, "trim_retry"));
    r.trim_pause_predicted_us = 178000;
    r.trim_holds = 9;
    r.trim_hold_max_us = 51000;
    r.trim_holds_waited = 2;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"trim_us\":5,\"trim_pause_predicted_us\":178000,"
                                      "\"trim_holds\":9,\"trim_hold_max_us\":51000,"
                                      "\"trim_holds_waited\":2,"));
    /* Where no holds are possible: held back, then tried anyway. */
    r = sample();
    r.actions = RT_ACT_GC;
    r.trim_skipped = RT_SKIP_pause_limit;
    r.trim_pause_predicted_us = 178000;
    r.trim_held_back_rounds = 3;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"trim_skipped\":\"pause_limit\","
                                      "\"trim_pause_predicted_us\":178000,"
                                      "\"trim_held_back_rounds\":3"));
    r = sample();
    r.trim_retry = true;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"trim_retry\":true"));
}
END_TEST

START_TEST(cuda_keys_only_when_the_driver_was_seen)
{
    struct roundtrim_round_record r = sample();
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "cuda_"));
    r.cuda.present = true;
    r.cuda.alloc_bytes = 1 << 20;
    r.cuda.live_bytes = 4096;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"cuda_alloc_bytes\":1048576"));
    ck_assert_ptr_nonnull(strstr(buf, "\"cuda_live_bytes\":4096"));
    ck_assert_ptr_null(strstr(buf, "cuda_free_mem")); /* no context was current */
    r.cuda.mem_info_skipped = RT_SKIP_no_context;
    r.cuda_pool_trim_skipped = RT_SKIP_cuda_capture;
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"cuda_mem_info_skipped\":\"no_context\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"cuda_pool_trim_skipped\":\"cuda_capture\""));
    ck_assert_ptr_null(strstr(buf, "cuda_free_mem"));
}
END_TEST

START_TEST(unknown_heap_is_null_and_no_cleanup_is_empty)
{
    struct roundtrim_round_record r = sample();
    r.heap_live_known = false;
    r.actions = 0;
    r.gc_ran = false;
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"heap_live\":null"));
    ck_assert_ptr_nonnull(strstr(buf, "\"cleanup\":[]"));
    ck_assert_ptr_null(strstr(buf, "trim_us"));
}
END_TEST

START_TEST(unseen_counts_are_null_with_the_reason)
{
    struct roundtrim_round_record r = sample();
    r.counts_skipped = RT_SKIP_allocator_before_roundtrim;
    r.signal_rounds_off = "program_set_default";
    char buf[2048];
    roundtrim_round_record_format(&r, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"malloc_calls\":null,\"free_calls\":null,"
                                      "\"malloc_bytes\":null,\"free_bytes\":null,"
                                      "\"counts_skipped\":\"allocator_before_roundtrim\","));
    ck_assert_ptr_nonnull(strstr(buf, "\"signal_rounds_off\":\"program_set_default\""));
}
END_TEST

START_TEST(too_small_a_buffer_gives_nothing_rather_than_half_a_record)
{
    struct roundtrim_round_record r = sample();
    char buf[2048];
    size_t full = roundtrim_round_record_format(&r, buf, sizeof buf);
    for (size_t cap = 0; cap < full + 1; cap += 7)
        ck_assert_uint_eq(roundtrim_round_record_format(&r, buf, cap), 0);
    ck_assert_uint_eq(roundtrim_round_record_format(&r, buf, full + 1), full);
}
END_TEST

START_TEST(strings_are_escaped)
{
    char buf[256];
    struct roundtrim_json j;
    roundtrim_json_begin(&j, buf, sizeof buf);
    roundtrim_json_str(&j, "exe", "/tmp/a \"b\"\\c\n");
    roundtrim_json_end(&j);
    ck_assert_str_eq(buf, "{\"exe\":\"/tmp/a \\\"b\\\"\\\\c\\u000a\"}\n");
}
END_TEST

/* A value copied from the environment or a path: one valid JSON string on one line, whatever
 * bytes it holds. */
START_TEST(control_bytes_and_invalid_utf8_are_escaped)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\tb\rc\x7f\x01", "a\\u0009b\\u000dc\\u007f\\u0001"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"\x80x", "\\ufffdx"},                                /* stray continuation byte */
        {"\xc0\x80", "\\ufffd\\ufffd"},                       /* overlong NUL */
        {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},            /* surrogate */
        {"\xe2\x82", "\\ufffd\\ufffd"},                       /* cut short at the end */
        {"\xe2\x82\"", "\\ufffd\\ufffd\\\""},                 /* cut short by a quote */
        {"\xf5\x80\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* past U+10FFFF */
        {"\xff", "\\ufffd"},
        {"/tmp/x\n{\"event\":\"round\"}", "/tmp/x\\u000a{\\\"event\\\":\\\"round\\\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[256], want[256];
        struct roundtrim_json j;
        roundtrim_json_begin(&j, buf, sizeof buf);
        roundtrim_json_str(&j, "v", cases[i].in);
        ck_assert_uint_gt(roundtrim_json_end(&j), 0);
        snprintf(want, sizeof want, "{\"v\":\"%s\"}\n", cases[i].out);
        ck_assert_str_eq(buf, want);
    }
}
END_TEST

/* comm is cut at 15 bytes, inside a character ("f_客户端训练" ends "\xe7"), or set to any bytes
 * with PR_SET_NAME: one invalid label and Prometheus drops the whole file. */
START_TEST(process_label_is_valid_utf8_whatever_the_name)
{
    static const struct {
        const char *name, *label;
    } cases[] = {
        {"f_\xe5\xae\xa2\xe6\x88\xb7\xe7\xab\xaf\xe8\xae\xad\xe7",
         "f_\xe5\xae\xa2\xe6\x88\xb7\xe7\xab\xaf\xe8\xae\xad\xef\xbf\xbd"},
        {"a\xff\xc0\x80z", "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"},
        {"t\x1b]0;x\x07", "t\xef\xbf\xbd]0;x\xef\xbf\xbd"},
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    };
    struct roundtrim_round_record r = sample();
    struct roundtrim_traffic total = {1, 1, 1, 1, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct roundtrim_prom_input in = {
            .pid = 1, .role = "client", .process = cases[i].name, .last = &r, .total = &total};
        char buf[8192], want[128];
        ck_assert_uint_gt(roundtrim_prom_format(&in, buf, sizeof buf), 0);
        snprintf(want, sizeof want, "process=\"%s\",", cases[i].label);
        ck_assert_ptr_nonnull(strstr(buf, want));
    }
}
END_TEST

START_TEST(prometheus_text_has_help_type_and_labels)
{
    struct roundtrim_round_record r = sample();
    struct roundtrim_traffic total = {100, 90, 10000, 9000, 0};
    struct roundtrim_prom_input in = {.pid = 42,
                                      .role = "client",
                                      .process = "py\"thon",
                                      .last = &r,
                                      .total = &total,
                                      .rounds = 7,
                                      .cleanups = 7,
                                      .released_bytes_total = 1234,
                                      .cleanup_cpu_us_total = 2500000};
    char buf[8192];
    size_t n = roundtrim_prom_format(&in, buf, sizeof buf);
    ck_assert_uint_gt(n, 0);
    ck_assert_ptr_nonnull(strstr(buf, "# TYPE roundtrim_rounds_total counter\n"
                                      "roundtrim_rounds_total{pid=\"42\",role=\"client\","
                                      "process=\"py\\\"thon\",framework=\"none\"} 7\n"));
    ck_assert_ptr_nonnull(strstr(buf, "# TYPE roundtrim_rss_bytes gauge\n"));
    ck_assert_ptr_nonnull(strstr(buf, "roundtrim_last_cleanup_seconds{pid=\"42\",role=\"client\","
                                      "process=\"py\\\"thon\",framework=\"none\"} 0.000012\n"));
    ck_assert_ptr_nonnull(strstr(buf, "roundtrim_released_bytes_total{"));
    ck_assert_ptr_nonnull(strstr(buf, "# TYPE roundtrim_cleanup_cpu_seconds_total counter\n"
                                      "roundtrim_cleanup_cpu_seconds_total{pid=\"42\","
                                      "role=\"client\",process=\"py\\\"thon\","
                                      "framework=\"none\"} 2.500000\n"));
    ck_assert_ptr_null(strstr(buf, "cuda"));
    ck_assert_ptr_nonnull(strstr(buf, "roundtrim_malloc_calls_total{"));
    ck_assert_uint_eq(roundtrim_prom_format(&in, buf, 100), 0);
    /* counts that were not seen are left out rather than given as zeros */
    r.counts_skipped = RT_SKIP_allocator_before_roundtrim;
    ck_assert_uint_gt(roundtrim_prom_format(&in, buf, sizeof buf), 0);
    ck_assert_ptr_null(strstr(buf, "roundtrim_malloc_calls_total"));
    ck_assert_ptr_null(strstr(buf, "roundtrim_free_bytes_total"));
    ck_assert_ptr_nonnull(strstr(buf, "roundtrim_rss_bytes{"));
}
END_TEST

/* Containers sharing a metrics folder each run their program as PID 1: the host name, last
 * label of every series, tells them apart. */
START_TEST(prometheus_series_carry_the_host_name)
{
    struct roundtrim_round_record r = sample();
    struct roundtrim_traffic total = {1, 1, 1, 1, 0};
    struct roundtrim_prom_input in = {.pid = 1,
                                      .role = "client",
                                      .process = "sh",
                                      .hostname = "c0ffee\"1",
                                      .last = &r,
                                      .total = &total,
                                      .rounds = 3};
    char buf[8192];
    ck_assert_uint_gt(roundtrim_prom_format(&in, buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "roundtrim_rounds_total{pid=\"1\",role=\"client\","
                                      "process=\"sh\",framework=\"none\","
                                      "hostname=\"c0ffee\\\"1\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(buf, ",hostname=\"c0ffee\\\"1\",part=\"file\"}"));
    for (const char *p = strchr(buf, '{'); p; p = strchr(p + 1, '{')) {
        const char *end = strchr(p, '}'), *host = strstr(p, "hostname=");
        ck_assert(end && host && host < end);
    }
}
END_TEST

START_TEST(memory_parts_and_action_yields)
{
    struct roundtrim_round_record r = sample();
    r.gc_freed_bytes = 4096;
    r.trim_released_bytes = 8192;
    r.memory.rss = 1000;
    for (int p = 0; p < RT_PART_COUNT; p++)
        r.memory.value[p] = (uint64_t)p * 10;
    r.memory.part_skipped[RT_PART_PYTHON] = RT_SKIP_no_python;
    r.memory.part_skipped[RT_PART_DEVICE_LIVE] = RT_SKIP_no_cuda;
    r.memory.part_skipped[RT_PART_DEVICE_CACHED] = RT_SKIP_no_cuda;
    char buf[4096];
    ck_assert(roundtrim_round_record_format(&r, buf, sizeof buf) > 0);
    ck_assert_ptr_nonnull(strstr(buf,
                                 "\"memory\":{\"rss\":1000,\"heap_live\":0,\"heap_free\":10,"
                                 "\"python\":null,\"python_skipped\":\"no_python\","
                                 "\"other_anon\":30,\"file\":40,\"shmem\":50,\"roundtrim\":60,"
                                 "\"device_live\":null,\"device_live_skipped\":\"no_cuda\","
                                 "\"device_cached\":null,\"device_cached_skipped\":\"no_cuda\","
                                 "\"over_rss\":0,\"read_us\":0}"));
    ck_assert_ptr_nonnull(strstr(buf, "\"trim_released_bytes\":8192"));
    ck_assert_ptr_nonnull(strstr(buf, "\"gc_freed_bytes\":4096"));
    /* Measured once the program began to exit: nothing of it is the round's. */
    r.memory.skipped = RT_SKIP_exiting;
    ck_assert(roundtrim_round_record_format(&r, buf, sizeof buf) > 0);
    ck_assert_ptr_nonnull(strstr(buf, "\"memory\":null,\"memory_skipped\":\"exiting\""));
    /* The metrics: one series per known part. */
    r.memory.skipped = RT_SKIP_NONE;
    struct roundtrim_traffic total = {1, 1, 1, 1, 0};
    struct roundtrim_prom_input in = {
        .pid = 1, .role = "client", .process = "p", .last = &r, .total = &total};
    char text[8192];
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    ck_assert_ptr_nonnull(strstr(
        text, "roundtrim_memory_bytes{pid=\"1\",role=\"client\",process=\"p\",framework=\"none\","
              "part=\"file\"} 40\n"));
    ck_assert_ptr_null(strstr(text, "part=\"python\""));
    ck_assert_ptr_null(strstr(text, "roundtrim_diagnosis{")); /* no diagnosis yet */
}
END_TEST

/* What the alerting rules read: the framework, skipped cleanup steps per reason, the limit and the
 * round's time. */
START_TEST(prometheus_text_has_what_the_alerts_read)
{
    struct roundtrim_round_record r = sample();
    struct roundtrim_traffic total = {1, 1, 1, 1, 0};
    struct roundtrim_skip_counts skips = {0};
    r.gc_skipped = RT_SKIP_gil_timeout;
    roundtrim_skip_counts_add(&skips, &r);
    roundtrim_skip_counts_add(&skips, &r);
    r.gc_skipped = RT_SKIP_program_gc;
    r.trim_skipped = RT_SKIP_program_trim;
    roundtrim_skip_counts_add(&skips, &r);
    r.mem_limit = 8589934592u;
    r.mem_limit_from_cgroup = true;
    struct roundtrim_prom_input in = {.pid = 7,
                                      .role = "client",
                                      .process = "python3",
                                      .last = &r,
                                      .total = &total,
                                      .framework = "flower",
                                      .skips = &skips};
    char text[8192];
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    const char *labels = "{pid=\"7\",role=\"client\",process=\"python3\",framework=\"flower\"";
    char want[512];
    snprintf(want, sizeof want,
             "# TYPE roundtrim_cleanup_skipped_total counter\n"
             "roundtrim_cleanup_skipped_total%s,action=\"gc\",reason=\"gil_timeout\"} 2\n"
             "roundtrim_cleanup_skipped_total%s,action=\"gc\",reason=\"program_gc\"} 1\n"
             "roundtrim_cleanup_skipped_total%s,action=\"trim\",reason=\"program_trim\"} 1\n",
             labels, labels, labels);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof want,
             "# TYPE roundtrim_memory_limit_bytes gauge\n"
             "roundtrim_memory_limit_bytes%s,source=\"cgroup\"} 8589934592\n",
             labels);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof want,
             "# TYPE roundtrim_last_round_timestamp_seconds gauge\n"
             "roundtrim_last_round_timestamp_seconds%s} 1700000000.250\n",
             labels);
    ck_assert_ptr_nonnull(strstr(text, want));
    /* MemTotal when no cgroup limit applies; no limit line when neither could be read. */
    r.mem_limit_from_cgroup = false;
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    ck_assert_ptr_nonnull(strstr(text, ",source=\"memtotal\"} 8589934592\n"));
    r.mem_limit = 0;
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    ck_assert_ptr_null(strstr(text, "roundtrim_memory_limit_bytes"));
    /* Nothing skipped yet: no series rather than a reason of nobody's. */
    in.skips = NULL;
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    ck_assert_ptr_null(strstr(text, "roundtrim_cleanup_skipped_total"));
}
END_TEST

START_TEST(skip_reasons_are_bounded)
{
    struct roundtrim_round_record r = sample();
    struct roundtrim_skip_counts skips = {0};
    int reasons = 0;
    for (int why = RT_SKIP_NONE + 1; why < RT_SKIP_COUNT; why++, reasons++) {
        r.torch_empty_cache_skipped = (enum roundtrim_skip)why;
        roundtrim_skip_counts_add(&skips, &r);
        roundtrim_skip_counts_add(&skips, &r);
    }
    ck_assert_int_gt(reasons, ROUNDTRIM_PROM_SKIP_ROWS);
    ck_assert_uint_eq(skips.n, ROUNDTRIM_PROM_SKIP_ROWS);
    ck_assert_uint_eq(skips.row[0].count, 2);
    ck_assert_int_eq(skips.row[ROUNDTRIM_PROM_SKIP_ROWS - 1].step, RT_CLEANUP_STEP_OTHER);
    ck_assert_uint_eq(skips.row[ROUNDTRIM_PROM_SKIP_ROWS - 1].count,
                      2 * (reasons - (ROUNDTRIM_PROM_SKIP_ROWS - 1)));
    struct roundtrim_traffic total = {1, 1, 1, 1, 0};
    struct roundtrim_prom_input in = {
        .pid = 1, .role = "client", .process = "p", .last = &r, .total = &total, .skips = &skips};
    char text[16384], first[128], other[128];
    ck_assert(roundtrim_prom_format(&in, text, sizeof text) > 0);
    snprintf(first, sizeof first, "action=\"torch_empty_cache\",reason=\"%s\"} 2\n",
             roundtrim_skip_name(RT_SKIP_NONE + 1));
    snprintf(other, sizeof other, "action=\"other\",reason=\"other\"} %d\n",
             2 * (reasons - (ROUNDTRIM_PROM_SKIP_ROWS - 1)));
    ck_assert_ptr_nonnull(strstr(text, first));
    ck_assert_ptr_nonnull(strstr(text, other));
}
END_TEST

/* Each cleanup step's skip reason is a key of the record (a STEP_REASON row) and a step of the
 * metric (an RT_STEP row): a skip key without its step, or a step without its key, fails here. */
static const struct {
    const char *name, *kind;
} table_fields[] = {
#define RT_FIELD(name, kind, unit, when, meaning, present, null_if, value) {#name, #kind},
#include "policy/round_fields.def"
};

static const struct {
    const char *step, *skip;
    size_t offset;
} table_steps[] = {
#define RT_STEP(step, skip, label) {#step, #skip, offsetof(struct roundtrim_round_record, skip)},
#include "policy/round_fields.def"
};

#define N_FIELDS (sizeof table_fields / sizeof table_fields[0])
#define N_STEPS  (sizeof table_steps / sizeof table_steps[0])

static bool names_a_step(const char *field)
{
    static const enum roundtrim_action actions[] = {RT_ACT_GC,
                                                    RT_ACT_TRIM,
                                                    RT_ACT_PURGE,
                                                    RT_ACT_TORCH_EMPTY_CACHE,
                                                    RT_ACT_CUDA_POOL_TRIM,
                                                    RT_ACT_CUPY_FREE_BLOCKS};
    if (strcmp(field, "cleanup_skipped") == 0)
        return true;
    char skip[64];
    for (size_t a = 0; a < sizeof actions / sizeof actions[0]; a++) {
        snprintf(skip, sizeof skip, "%s_skipped", roundtrim_action_name(actions[a]));
        if (strcmp(field, skip) == 0)
            return true;
    }
    return false;
}

START_TEST(every_step_skip_key_has_its_step_and_every_step_its_key)
{
    for (size_t f = 0; f < N_FIELDS; f++) {
        size_t named = 0;
        for (size_t s = 0; s < N_STEPS; s++)
            named += strcmp(table_steps[s].skip, table_fields[f].name) == 0;
        bool step_reason = strcmp(table_fields[f].kind, "STEP_REASON") == 0;
        ck_assert_msg(named == (step_reason ? 1u : 0u), "%s (%s) is named by %zu RT_STEP rows",
                      table_fields[f].name, table_fields[f].kind, named);
        /* a step's skip declared as a plain reason would have no metric */
        ck_assert_msg(step_reason || !names_a_step(table_fields[f].name),
                      "%s is a step's skip reason: kind STEP_REASON with an RT_STEP row",
                      table_fields[f].name);
    }
    for (size_t s = 0; s < N_STEPS; s++) {
        size_t declared = 0;
        for (size_t f = 0; f < N_FIELDS; f++)
            declared += strcmp(table_fields[f].name, table_steps[s].skip) == 0 &&
                        strcmp(table_fields[f].kind, "STEP_REASON") == 0;
        ck_assert_msg(declared == 1, "RT_STEP %s: %s is no STEP_REASON row", table_steps[s].step,
                      table_steps[s].skip);
    }
}
END_TEST

/* A step skipped alone: its key in the record, one series under its step in the metrics. */
START_TEST(a_skipped_step_is_in_the_record_and_counted_under_its_step)
{
    for (size_t s = 0; s < N_STEPS; s++) {
        struct roundtrim_round_record r = sample();
        r.actions = 0;
        r.gc_ran = false;
        *(enum roundtrim_skip *)((char *)&r + table_steps[s].offset) = RT_SKIP_no_yield;
        char buf[4096], want[128];
        ck_assert_uint_gt(roundtrim_round_record_format(&r, buf, sizeof buf), 0);
        snprintf(want, sizeof want, "\"%s\":\"no_yield\"", table_steps[s].skip);
        ck_assert_msg(strstr(buf, want) != NULL, "%s not in %s", want, buf);
        struct roundtrim_skip_counts skips = {0};
        roundtrim_skip_counts_add(&skips, &r);
        struct roundtrim_prom_input in = {.pid = 1,
                                          .role = "client",
                                          .process = "p",
                                          .last = &r,
                                          .total = &r.traffic,
                                          .skips = &skips};
        char text[16384];
        ck_assert_uint_gt(roundtrim_prom_format(&in, text, sizeof text), 0);
        snprintf(want, sizeof want, ",action=\"%s\",reason=\"no_yield\"} 1\n", table_steps[s].step);
        const char *at = strstr(text, want);
        ck_assert_msg(at != NULL, "%s not in the metrics", want);
        ck_assert_ptr_null(strstr(at + 1, "roundtrim_cleanup_skipped_total{"));
        ck_assert_uint_eq(skips.n, 1);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("records");
    TCase *tc = tcase_create("records");
    tcase_add_test(tc, a_record_says_what_it_merged_and_why_its_cleanup_was_skipped);
    tcase_add_test(tc, round_record_has_every_key_in_order);
    tcase_add_test(tc, every_declared_key_and_only_those_are_written);
    tcase_add_test(tc, a_trim_in_holds_and_a_trim_held_back_say_so);
    tcase_add_test(tc, cuda_keys_only_when_the_driver_was_seen);
    tcase_add_test(tc, hook_and_skips_of_what_the_program_did);
    tcase_add_test(tc, unknown_heap_is_null_and_no_cleanup_is_empty);
    tcase_add_test(tc, unseen_counts_are_null_with_the_reason);
    tcase_add_test(tc, too_small_a_buffer_gives_nothing_rather_than_half_a_record);
    tcase_add_test(tc, strings_are_escaped);
    tcase_add_test(tc, control_bytes_and_invalid_utf8_are_escaped);
    tcase_add_test(tc, prometheus_text_has_help_type_and_labels);
    tcase_add_test(tc, prometheus_series_carry_the_host_name);
    tcase_add_test(tc, process_label_is_valid_utf8_whatever_the_name);
    tcase_add_test(tc, memory_parts_and_action_yields);
    tcase_add_test(tc, prometheus_text_has_what_the_alerts_read);
    tcase_add_test(tc, skip_reasons_are_bounded);
    tcase_add_test(tc, every_step_skip_key_has_its_step_and_every_step_its_key);
    tcase_add_test(tc, a_skipped_step_is_in_the_record_and_counted_under_its_step);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
