/* When a growing process reaches its memory limit: the headroom under the cgroup's limit and the
 * machine's available memory, the rounds it lasts at its growth, and whether the job ends
 * first. */
#include <check.h>
#include <string.h>

#include "policy/forecast.h"
#include "run_suite.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

START_TEST(the_cgroup_headroom_leaves_out_inactive_page_cache)
{
    /* 1 GiB limit, 900 MiB charged, 36 MiB of it inactive page cache: 160 MiB left */
    struct roundtrim_headroom_in in = {.cgroup_limit = GiB,
                                       .cgroup_usage_known = true,
                                       .cgroup_usage = 900 * MiB,
                                       .cgroup_inactive_file = 36 * MiB,
                                       .available_known = true,
                                       .available = 20 * GiB};
    uint64_t room;
    ck_assert_int_eq(roundtrim_headroom(&in, &room), RT_HEADROOM_CGROUP);
    ck_assert_uint_eq(room, 160 * MiB);
    ck_assert_str_eq(roundtrim_headroom_of_name(RT_HEADROOM_CGROUP), "cgroup");
}
END_TEST

START_TEST(the_smaller_of_cgroup_and_machine_is_the_headroom)
{
    /* the machine has less available than the cgroup would allow: the machine is the limit */
    struct roundtrim_headroom_in in = {.cgroup_limit = 64 * GiB,
                                       .cgroup_usage_known = true,
                                       .cgroup_usage = 2 * GiB,
                                       .available_known = true,
                                       .available = 3 * GiB};
    uint64_t room;
    ck_assert_int_eq(roundtrim_headroom(&in, &room), RT_HEADROOM_MACHINE);
    ck_assert_uint_eq(room, 3 * GiB);
    /* no cgroup limit: the machine */
    in.cgroup_limit = 0;
    ck_assert_int_eq(roundtrim_headroom(&in, &room), RT_HEADROOM_MACHINE);
    /* a charge past the limit (page cache the kernel has yet to reclaim): nothing left */
    struct roundtrim_headroom_in over = {
        .cgroup_limit = GiB, .cgroup_usage_known = true, .cgroup_usage = 2 * GiB};
    ck_assert_int_eq(roundtrim_headroom(&over, &room), RT_HEADROOM_CGROUP);
    ck_assert_uint_eq(room, 0);
    /* more inactive cache than the charge (figures read at different moments) */
    over.cgroup_inactive_file = 3 * GiB;
    ck_assert_int_eq(roundtrim_headroom(&over, &room), RT_HEADROOM_CGROUP);
    ck_assert_uint_eq(room, GiB);
    /* nothing readable */
    struct roundtrim_headroom_in none = {0};
    ck_assert_int_eq(roundtrim_headroom(&none, &room), RT_HEADROOM_UNKNOWN);
    ck_assert_ptr_null(roundtrim_headroom_of_name(RT_HEADROOM_UNKNOWN));
}
END_TEST

static struct roundtrim_forecast_in leak(double growth, uint64_t room, uint64_t job)
{
    return (struct roundtrim_forecast_in){.growing = true,
                                          .host_growth = growth,
                                          .min_growth = 8192,
                                          .round = 40,
                                          .headroom_of = RT_HEADROOM_CGROUP,
                                          .headroom = room,
                                          .job_rounds = job};
}

START_TEST(a_leak_reaches_the_limit_in_the_rounds_its_headroom_lasts)
{
    struct roundtrim_forecast f;
    struct roundtrim_forecast_in in = leak(2.0 * MiB, 160 * MiB, 0);
    roundtrim_forecast(&in, &f);
    ck_assert_ptr_null(f.skipped);
    ck_assert_uint_eq(f.rounds_to_limit, 80);
    ck_assert_uint_eq(f.limit_round, 120);
    ck_assert_uint_eq(f.headroom, 160 * MiB);
    ck_assert_int_eq(f.before_job_end, -1); /* the job's rounds unknown */
    /* a part of a round left over is one more round */
    in.host_growth = 3.0 * MiB;
    roundtrim_forecast(&in, &f);
    ck_assert_uint_eq(f.rounds_to_limit, 54);
    /* no headroom left: the next round */
    in.headroom = 0;
    roundtrim_forecast(&in, &f);
    ck_assert_uint_eq(f.rounds_to_limit, 1);
    ck_assert_uint_eq(f.limit_round, 41);
}
END_TEST

START_TEST(the_job_ends_first_or_the_limit_comes_first)
{
    struct roundtrim_forecast f;
    struct roundtrim_forecast_in in = leak(2.0 * MiB, 160 * MiB, 500);
    roundtrim_forecast(&in, &f);
    ck_assert_int_eq(f.before_job_end, 1); /* round 120 of 500 */
    ck_assert_uint_eq(f.job_rounds, 500);
    in.job_rounds = 120;
    roundtrim_forecast(&in, &f);
    ck_assert_int_eq(f.before_job_end, 1); /* the last round is already one too many */
    in.job_rounds = 119;
    roundtrim_forecast(&in, &f);
    ck_assert_int_eq(f.before_job_end, 0);
}
END_TEST

START_TEST(no_forecast_without_host_growth_or_headroom)
{
    struct roundtrim_forecast f;
    struct roundtrim_forecast_in in = leak(2.0 * MiB, 160 * MiB, 500);
    in.growing = false; /* none, unsure, or the CUDA cache */
    roundtrim_forecast(&in, &f);
    ck_assert_str_eq(f.skipped, "no_growth");
    ck_assert_int_eq(f.before_job_end, -1);
    in = leak(4096, 160 * MiB, 500); /* under the smallest growth */
    roundtrim_forecast(&in, &f);
    ck_assert_str_eq(f.skipped, "no_growth");
    in = leak(-2.0 * MiB, 160 * MiB, 500);
    roundtrim_forecast(&in, &f);
    ck_assert_str_eq(f.skipped, "no_growth");
    in = leak(0, 160 * MiB, 500); /* a leak of device memory */
    in.device_growth = 2.0 * MiB;
    roundtrim_forecast(&in, &f);
    ck_assert_str_eq(f.skipped, "device_growth");
    in = leak(2.0 * MiB, 0, 500);
    in.headroom_of = RT_HEADROOM_UNKNOWN;
    roundtrim_forecast(&in, &f);
    ck_assert_str_eq(f.skipped, "headroom_unknown");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("forecast");
    TCase *tc = tcase_create("forecast");
    tcase_add_test(tc, the_cgroup_headroom_leaves_out_inactive_page_cache);
    tcase_add_test(tc, the_smaller_of_cgroup_and_machine_is_the_headroom);
    tcase_add_test(tc, a_leak_reaches_the_limit_in_the_rounds_its_headroom_lasts);
    tcase_add_test(tc, the_job_ends_first_or_the_limit_comes_first);
    tcase_add_test(tc, no_forecast_without_host_growth_or_headroom);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
