/* The start's one pass over the environment: which variables the settings keep, and when the
 * loader was told something that changes dlsym's answers. Each test runs in a process of its own
 * (Check forks), so each scans its own environment once. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_suite.h"
#include "runtime/core/env_scan.h"

/* The scan of env; the process's own environment is put back at once (Check reads it). */
static const struct roundtrim_env_scan *scan_of(char **env)
{
    char **own = environ;
    environ = env;
    const struct roundtrim_env_scan *s = roundtrim_env_scan();
    environ = own;
    return s;
}

START_TEST(our_glibcs_and_nvflares_variables_are_kept_in_order)
{
    char *env[] = {"PATH=/bin",
                   "ROUNDTRIM_LOG=x",
                   "HOME=/root",
                   "NVFLARE_CUDA_EMPTY_CACHE=1",
                   "MALLOC_ARENA_MAX=2",
                   "GLIBC_TUNABLES=glibc.malloc.arena_max=2",
                   "ROUNDTRIMX=1",
                   "RANDOM=4",
                   NULL};
    const struct roundtrim_env_scan *s = scan_of(env);
    ck_assert_uint_eq(s->kept_count, 4);
    ck_assert_str_eq(s->kept[0], "ROUNDTRIM_LOG=x");
    ck_assert_str_eq(s->kept[1], "NVFLARE_CUDA_EMPTY_CACHE=1");
    ck_assert_str_eq(s->kept[2], "MALLOC_ARENA_MAX=2");
    ck_assert_str_eq(s->kept[3], "GLIBC_TUNABLES=glibc.malloc.arena_max=2");
    ck_assert(!s->overflow);
    ck_assert(!s->loader_changed);
}
END_TEST

static const char *const loader_entries[] = {
    "LD_AUDIT=/x.so",
    "LD_DEBUG=bindings",
    "LD_DYNAMIC_WEAK=1",
    "GLIBC_TUNABLES=glibc.rtld.dynamic_weak=1",
};

START_TEST(what_changes_dlsym_is_noticed_wherever_it_stands)
{
    char *env[] = {"PATH=/bin", "ROUNDTRIM_LOG=x", (char *)loader_entries[_i], "HOME=/", NULL};
    ck_assert(scan_of(env)->loader_changed);
}
END_TEST

START_TEST(look_alikes_change_nothing)
{
    char *env[] = {"LD_LIBRARY_PATH=/x",           "LD_PRELOAD=/y.so", "LD_AUDITX=1", "LDAUDIT=1",
                   "GLIBC_TUNABLESX=dynamic_weak", "OTHER=LD_AUDIT=1", NULL};
    ck_assert(!scan_of(env)->loader_changed);
}
END_TEST

START_TEST(past_the_kept_ones_the_rest_is_still_scanned)
{
    static char names[ROUNDTRIM_ENV_KEPT + 8][32];
    char *env[ROUNDTRIM_ENV_KEPT + 10];
    size_t n = 0;
    for (; n < ROUNDTRIM_ENV_KEPT + 8; n++) {
        snprintf(names[n], sizeof names[n], "ROUNDTRIM_X%zu=1", n);
        env[n] = names[n];
    }
    env[n++] = "LD_AUDIT=/x.so";
    env[n] = NULL;
    const struct roundtrim_env_scan *s = scan_of(env);
    ck_assert_uint_eq(s->kept_count, ROUNDTRIM_ENV_KEPT);
    ck_assert(s->overflow);
    ck_assert(s->loader_changed);
}
END_TEST

START_TEST(an_empty_environment_keeps_nothing)
{
    ck_assert_uint_eq(scan_of(NULL)->kept_count, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("env_scan");
    TCase *tc = tcase_create("env_scan");
    tcase_add_test(tc, our_glibcs_and_nvflares_variables_are_kept_in_order);
    tcase_add_loop_test(tc, what_changes_dlsym_is_noticed_wherever_it_stands, 0,
                        sizeof loader_entries / sizeof loader_entries[0]);
    tcase_add_test(tc, look_alikes_change_nothing);
    tcase_add_test(tc, past_the_kept_ones_the_rest_is_still_scanned);
    tcase_add_test(tc, an_empty_environment_keeps_nothing);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
