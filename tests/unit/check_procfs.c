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
    ck_assert(roundtrim_expand_path("/var/log/rt-%p.jsonl", 1234, "h", out, sizeof out));
    ck_assert_str_eq(out, "/var/log/rt-1234.jsonl");
    ck_assert(roundtrim_expand_path("100%%-%p", 7, "h", out, sizeof out));
    ck_assert_str_eq(out, "100%-7");
    ck_assert(roundtrim_expand_path("/logs/rt-%h-%p.jsonl", 1, "c0ffee", out, sizeof out));
    ck_assert_str_eq(out, "/logs/rt-c0ffee-1.jsonl");
    ck_assert(!roundtrim_expand_path("/a/very/long/path/%p", 1234567, "h", out, 10));
    ck_assert(!roundtrim_expand_path("/a/%h", 1, "a-host-name-longer-than-room", out, 10));
}
END_TEST

START_TEST(host_names_become_plain_file_name_parts)
{
    static const struct {
        const char *name, *safe;
    } cases[] = {
        {"trainer-0.ns", "trainer-0.ns"},
        {"../etc", "_._etc"},
        {"..", "_."},
        {"a b\n/\x1b", "a_b___"},
        {"", "_"},
        {"abcdefghijklmnopqrstuvwxyz", "abcdefghijklmno"}, /* cut to the room */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        roundtrim_safe_host_name(cases[i].name, out, sizeof out);
        ck_assert_str_eq(out, cases[i].safe);
    }
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

START_TEST(status_memory_split)
{
    struct roundtrim_status_mem m;
    roundtrim_parse_status_mem("VmRSS:\t  3000 kB\nRssAnon:\t 2000 kB\nRssFile:\t 900 kB\n"
                               "RssShmem:\t 100 kB\n",
                               &m);
    ck_assert(m.have_rss && m.have_parts);
    ck_assert_uint_eq(m.rss, 3000 * 1024);
    ck_assert_uint_eq(m.anon + m.file + m.shmem, m.rss);
    roundtrim_parse_status_mem("VmRSS:\t  3000 kB\n", &m); /* a kernel before 4.5 */
    ck_assert(m.have_rss && !m.have_parts);
}
END_TEST

START_TEST(memory_stat_fields)
{
    const char *v2 = "anon 123\nfile 4096\ninactive_anon 7\ninactive_file 8192\n";
    uint64_t v = 1;
    ck_assert(roundtrim_parse_stat_field(v2, "inactive_file", &v));
    ck_assert_uint_eq(v, 8192);
    ck_assert(roundtrim_parse_stat_field(v2, "anon", &v));
    ck_assert_uint_eq(v, 123);
    ck_assert(!roundtrim_parse_stat_field(v2, "total_inactive_file", &v));
    ck_assert(!roundtrim_parse_stat_field(v2, "inactive", &v)); /* a whole name only */
    ck_assert(roundtrim_parse_stat_field("total_inactive_file 55\n", "total_inactive_file", &v));
    ck_assert_uint_eq(v, 55);
    ck_assert(!roundtrim_parse_stat_field("inactive_file x\n", "inactive_file", &v));
}
END_TEST

START_TEST(maps_lines)
{
    struct roundtrim_map_line m;
    ck_assert(roundtrim_parse_map_line("55d0c0a00000-55d0c0c21000 rw-p 00000000 00:00 0          "
                                       "                [heap]",
                                       &m));
    ck_assert(m.brk_heap && m.anonymous && m.writable && !m.shared);
    ck_assert_uint_eq(m.end - m.start, 0x221000);
    ck_assert(roundtrim_parse_map_line("7f1c4d000000-7f1c4d021000 rw-p 00000000 00:00 0 \n", &m));
    ck_assert(m.anonymous && !m.brk_heap);
    ck_assert(roundtrim_parse_map_line("7f1c50000000-7f1c50200000 r-xp 00010000 08:01 123456   "
                                       "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                       &m));
    ck_assert(!m.anonymous && m.exec);
    ck_assert_uint_eq(m.dev, (uint64_t)8 << 32 | 1);
    ck_assert_uint_eq(m.inode, 123456);
    ck_assert(roundtrim_parse_map_line("7f1c50000000-7f1c50200000 r--p 00000000 fd:1a 9   /x", &m));
    ck_assert_uint_eq(m.dev, (uint64_t)0xfd << 32 | 0x1a);
    ck_assert_uint_eq(m.inode, 9);
    ck_assert(roundtrim_parse_map_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0  [stack]", &m));
    ck_assert(m.anonymous && !m.brk_heap);
    ck_assert(!roundtrim_parse_map_line("not a maps line", &m));
    ck_assert(!roundtrim_parse_map_line("1000-2000 rw", &m));
}
END_TEST

START_TEST(glibc_arena_heaps)
{
    struct roundtrim_map_line heap, rest, other;
    /* A non-main arena's heap: 64 MiB aligned, the used part read-write, the rest PROT_NONE. */
    roundtrim_parse_map_line("7f1c48000000-7f1c48021000 rw-p 00000000 00:00 0", &heap);
    roundtrim_parse_map_line("7f1c48021000-7f1c4c000000 ---p 00000000 00:00 0", &rest);
    ck_assert(roundtrim_glibc_arena_heap(&heap, &rest));
    ck_assert(!roundtrim_glibc_arena_heap(&heap, NULL)); /* no reservation after it */
    /* A heap grown to its whole size has no rest. */
    roundtrim_parse_map_line("7f1c48000000-7f1c4c000000 rw-p 00000000 00:00 0", &heap);
    ck_assert(roundtrim_glibc_arena_heap(&heap, NULL));
    /* Not aligned: a thread stack or an anonymous mapping of the program. */
    roundtrim_parse_map_line("7f1c48001000-7f1c48021000 rw-p 00000000 00:00 0", &other);
    ck_assert(!roundtrim_glibc_arena_heap(&other, &rest));
    /* Aligned but longer than a heap. */
    roundtrim_parse_map_line("7f1c48000000-7f1c50000000 rw-p 00000000 00:00 0", &other);
    ck_assert(!roundtrim_glibc_arena_heap(&other, NULL));
    /* A file mapping. */
    roundtrim_parse_map_line("7f1c48000000-7f1c48021000 rw-p 00000000 08:01 99 /tmp/x", &other);
    ck_assert(!roundtrim_glibc_arena_heap(&other, &rest));
}
END_TEST

START_TEST(glibc_large_block_headers)
{
    const uint64_t page = 4096, len = 260 << 10;
    /* malloc(256 KiB) above the threshold: a zero prev_size, the mapping's size | IS_MMAPPED. */
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, len | 2, len, page), len);
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, len | 2, 4 * len, page), len);
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, len, len, page), 0);     /* not mmapped */
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, len | 6, len, page), 0); /* non-main */
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(16, len | 2, len, page), 0);
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, (len + 8) | 2, 2 * len, page), 0);
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(0, len | 2, len - page, page), 0); /* past */
    /* A pymalloc arena's first pool: a block count, then a pointer. */
    ck_assert_uint_eq(roundtrim_glibc_mmapped_chunk(3, 0x7f12345678a0, 1 << 20, page), 0);
    struct roundtrim_map_line m;
    ck_assert(roundtrim_parse_map_line("7f0000000000-7f0000041000 rw-p 00000000 00:00 0 ", &m));
    ck_assert(m.unnamed && m.anonymous);
    ck_assert(
        roundtrim_parse_map_line("7ffc0000000-7ffc0021000 rw-p 00000000 00:00 0  [stack]", &m));
    ck_assert(!m.unnamed && m.anonymous);
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
    tcase_add_test(tc, host_names_become_plain_file_name_parts);
    tcase_add_test(tc, pressure_warns_once_per_crossing);
    tcase_add_test(tc, pressure_cleanups_are_rate_limited);
    tcase_add_test(tc, round_interval);
    tcase_add_test(tc, status_memory_split);
    tcase_add_test(tc, maps_lines);
    tcase_add_test(tc, memory_stat_fields);
    tcase_add_test(tc, glibc_arena_heaps);
    tcase_add_test(tc, glibc_large_block_headers);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
