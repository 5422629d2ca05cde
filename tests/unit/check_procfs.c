/* Parsing what Linux reports about memory, and the decisions taken on it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "policy/options.h"
#include "policy/pressure.h"
#include "policy/procfs.h"
#include "run_suite.h"

START_TEST(status_and_meminfo_fields)
{
    const char *status = "Name:\tpython3\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n";
    uint64_t v = 0;
    ck_assert(roundtrim_parse_kb_field(status, "VmHWM", &v));
    ck_assert_uint_eq(v, 123456ull * 1024);
    ck_assert(!roundtrim_parse_kb_field(status, "VmSwap", &v));
    ck_assert(roundtrim_parse_kb_field("MemTotal:       24576000 kB\n", "MemTotal", &v));
    ck_assert_uint_eq(v, 24576000ull * 1024);
}
END_TEST

START_TEST(statm_resident_pages)
{
    uint64_t v = 0;
    ck_assert(roundtrim_parse_statm_resident("1000 250 30 4 0 100 0\n", 4096, &v));
    ck_assert_uint_eq(v, 250 * 4096);
    ck_assert(!roundtrim_parse_statm_resident("garbage", 4096, &v));
}
END_TEST

START_TEST(cgroup_limits_v1_v2_and_unlimited)
{
    uint64_t v = 1;
    ck_assert(roundtrim_parse_cgroup_limit("max\n", &v));
    ck_assert_uint_eq(v, 0);
    ck_assert(roundtrim_parse_cgroup_limit("536870912\n", &v));
    ck_assert_uint_eq(v, 536870912);
    ck_assert(roundtrim_parse_cgroup_limit("9223372036854771712\n", &v));
    ck_assert_uint_eq(v, 0);
    ck_assert(!roundtrim_parse_cgroup_limit("", &v));
}
END_TEST

START_TEST(cgroup_directory_from_proc_self_cgroup)
{
    char dir[256];
    ck_assert(roundtrim_cgroup_dir_from_proc("0::/kubepods/pod1/ctr\n", dir, sizeof dir));
    ck_assert_str_eq(dir, "/sys/fs/cgroup/kubepods/pod1/ctr");
    ck_assert(roundtrim_cgroup_dir_from_proc("12:cpu,cpuacct:/a\n4:memory:/docker/abc\n0::/\n", dir,
                                             sizeof dir));
    ck_assert_str_eq(dir, "/sys/fs/cgroup/memory/docker/abc");
    ck_assert(!roundtrim_cgroup_dir_from_proc("5:cpu:/x\n", dir, sizeof dir));
}
END_TEST

START_TEST(path_templates)
{
    char out[64];
    ck_assert(roundtrim_expand_path("/var/log/rt-%p.jsonl", 1234, out, sizeof out));
    ck_assert_str_eq(out, "/var/log/rt-1234.jsonl");
    ck_assert(roundtrim_expand_path("100%%-%p", 7, out, sizeof out));
    ck_assert_str_eq(out, "100%-7");
    ck_assert(!roundtrim_expand_path("/a/very/long/path/%p", 1234567, out, 10));
}
END_TEST

static struct roundtrim_config cfg_with(uint64_t warn, uint64_t clean, uint64_t gap_s)
{
    struct roundtrim_config c;
    memset(&c, 0, sizeof c);
    c.pressure_warn = warn;
    c.pressure_clean = clean;
    c.pressure_gap_s = gap_s;
    return c;
}

START_TEST(pressure_warns_once_per_crossing)
{
    struct roundtrim_config c = cfg_with(85, 0, 10);
    struct roundtrim_pressure st = {0};
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 80, 100, 0), 0);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 86, 100, 1000), RT_PRESSURE_WARN);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 90, 100, 2000), 0);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 84, 100, 3000), 0); /* hovering */
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 86, 100, 4000), 0);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 50, 100, 5000), 0); /* re-armed */
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 85, 100, 6000), RT_PRESSURE_WARN);
}
END_TEST

START_TEST(pressure_cleanups_are_rate_limited)
{
    struct roundtrim_config c = cfg_with(0, 90, 10);
    struct roundtrim_pressure st = {0};
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 95, 100, 1000), RT_PRESSURE_CLEAN);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 95, 100, 5000), 0);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 95, 100, 11000), RT_PRESSURE_CLEAN);
    ck_assert_uint_eq(roundtrim_pressure_update(&st, &c, 95, 0, 30000), 0); /* no limit known */
}
END_TEST

START_TEST(round_interval)
{
    struct roundtrim_config c = cfg_with(0, 0, 0);
    c.gc_rounds = 5;
    ck_assert(!roundtrim_round_cleans(&c, 4));
    ck_assert(roundtrim_round_cleans(&c, 5));
    ck_assert(roundtrim_round_cleans(&c, 10));
    c.gc_rounds = 0;
    ck_assert(!roundtrim_round_cleans(&c, 5));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("procfs");
    TCase *tc = tcase_create("procfs");
    tcase_add_test(tc, status_and_meminfo_fields);
    tcase_add_test(tc, statm_resident_pages);
    tcase_add_test(tc, cgroup_limits_v1_v2_and_unlimited);
    tcase_add_test(tc, cgroup_directory_from_proc_self_cgroup);
    tcase_add_test(tc, path_templates);
    tcase_add_test(tc, pressure_warns_once_per_crossing);
    tcase_add_test(tc, pressure_cleanups_are_rate_limited);
    tcase_add_test(tc, round_interval);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
