/* The option table and the environment parser: defaults, roles, aliases, bad values. */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_fixture.h"
#include "policy/options.h"
#include "policy/parse.h"
#include "run_suite.h"

static struct roundtrim_config cfg;

static void load(const char *const *env)
{
    roundtrim_config_load(&cfg, fake_env, (void *)env);
}

START_TEST(table_rows_match_their_ids)
{
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        ck_assert_int_eq(roundtrim_options[i].id, i);
        ck_assert_ptr_nonnull(roundtrim_options[i].meaning);
        ck_assert(strncmp(roundtrim_options[i].name, "ROUNDTRIM_", 10) == 0);
    }
}
END_TEST

/* The rows are read in order: the role comes before every default and alias it decides. */
START_TEST(role_is_read_before_what_it_decides)
{
    for (int i = 0; i <= RT_OPT_ROLE; i++) {
        ck_assert_ptr_null(roundtrim_options[i].server_default);
        ck_assert(!roundtrim_options[i].alias_client_only);
    }
}
END_TEST

/* Each row locates its value: what a variable sets is what the row's field holds. */
START_TEST(rows_locate_their_values)
{
    const char *env[] = {"ROUNDTRIM_DIAG_ROUNDS",
                         "17",
                         "ROUNDTRIM_PROM_FILE",
                         "/tmp/m.prom",
                         "ROUNDTRIM_ROUND_SIGNAL",
                         "USR2",
                         NULL};
    load(env);
    ck_assert_ptr_eq(roundtrim_config_field(&cfg, RT_OPT_DIAG_ROUNDS), &cfg.diag_rounds);
    ck_assert_uint_eq(cfg.diag_rounds, 17);
    ck_assert_str_eq(cfg.prom_file, "/tmp/m.prom");
    ck_assert_int_eq(cfg.round_signal, SIGUSR2);
    /* A text option the caller could not keep shows its default. */
    cfg.py_hook = NULL;
    char text[64];
    roundtrim_config_value_text(&cfg, RT_OPT_PY_HOOK, text, sizeof text);
    ck_assert_str_eq(text, "auto");
    cfg.prom_file = NULL;
    roundtrim_config_value_text(&cfg, RT_OPT_PROM_FILE, text, sizeof text);
    ck_assert_str_eq(text, "");
}
END_TEST

/* Each default is written once, in its row: what the parser makes of an empty environment, shown
 * back as text, is that row's text, for both roles. */
START_TEST(parsed_defaults_equal_the_table_text)
{
    const char *server[] = {"ROUNDTRIM_ROLE", "server", NULL};
    for (int role = 0; role < 2; role++) {
        load(role ? server : NULL);
        ck_assert_uint_eq(cfg.warning_count, 0);
        for (int i = 0; i < RT_OPT_COUNT; i++) {
            const struct roundtrim_option *o = &roundtrim_options[i];
            if (i == RT_OPT_ROLE)
                continue; /* set by the test itself */
            const char *want = role && o->server_default ? o->server_default : o->default_value;
            char got[256];
            roundtrim_config_value_text(&cfg, o->id, got, sizeof got);
            ck_assert_msg(strcmp(got, want ? want : "") == 0, "%s: parsed default %s, table %s",
                          o->name, got, want ? want : "(unset)");
            ck_assert_str_eq(roundtrim_config_source_text(&cfg, o->id),
                             o->server_default ? "role" : "default");
        }
    }
}
END_TEST

START_TEST(default_text_says_roles_notes_and_unset)
{
    char text[128];
    roundtrim_option_default_text(&roundtrim_options[RT_OPT_GC_ROUNDS], text, sizeof text);
    ck_assert_str_eq(text, "1 (client), 5 (server)");
    roundtrim_option_default_text(&roundtrim_options[RT_OPT_INTERVAL_S], text, sizeof text);
    ck_assert_str_eq(text, "0 (off)");
    roundtrim_option_default_text(&roundtrim_options[RT_OPT_PROM_FILE], text, sizeof text);
    ck_assert_str_eq(text, "(unset: no metrics file is written)");
    roundtrim_option_default_text(&roundtrim_options[RT_OPT_PRESSURE_WARN], text, sizeof text);
    ck_assert_str_eq(text, "85");
}
END_TEST

START_TEST(defaults_are_the_client_role)
{
    load(NULL);
    ck_assert(!cfg.disabled);
    ck_assert_int_eq(cfg.role, RT_ROLE_CLIENT);
    ck_assert_uint_eq(cfg.gc_rounds, 1);
    ck_assert_uint_eq(cfg.arena_max, 0);
    ck_assert_uint_eq(cfg.mmap_threshold, 0);
    ck_assert(cfg.adaptive);
    ck_assert_uint_eq(cfg.cleanup_budget, 20);
    ck_assert_uint_eq(cfg.trim_pause_ms, 100);
    ck_assert_int_eq(cfg.round_signal, SIGUSR1);
    ck_assert_ptr_null(cfg.log_path);
    ck_assert_uint_eq(cfg.warning_count, 0);
    ck_assert_str_eq(roundtrim_config_source_text(&cfg, RT_OPT_GC_ROUNDS), "role");
    ck_assert_str_eq(roundtrim_config_source_text(&cfg, RT_OPT_LOG), "default");
    ck_assert(!roundtrim_config_wants_sampling(&cfg));
}
END_TEST

START_TEST(server_role_cleans_every_fifth_round_with_four_arenas)
{
    const char *env[] = {"ROUNDTRIM_ROLE", "server", NULL};
    load(env);
    ck_assert_uint_eq(cfg.gc_rounds, 5);
    ck_assert_uint_eq(cfg.arena_max, 4);
    ck_assert_uint_eq(cfg.mmap_threshold, 1u << 20);
}
END_TEST

START_TEST(nvflare_interval_applies_to_clients_only)
{
    const char *client[] = {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "3", NULL};
    load(client);
    ck_assert_uint_eq(cfg.gc_rounds, 3);
    ck_assert_str_eq(roundtrim_config_source_text(&cfg, RT_OPT_GC_ROUNDS),
                     "NVFLARE_CLIENT_MEMORY_GC_ROUNDS");
    const char *server[] = {"ROUNDTRIM_ROLE", "server", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "3",
                            NULL};
    load(server);
    ck_assert_uint_eq(cfg.gc_rounds, 5);
}
END_TEST

START_TEST(own_variable_wins_over_alias)
{
    const char *env[] = {"ROUNDTRIM_GC_ROUNDS", "7", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "3", NULL};
    load(env);
    ck_assert_uint_eq(cfg.gc_rounds, 7);
    ck_assert_str_eq(roundtrim_config_source_text(&cfg, RT_OPT_GC_ROUNDS), "ROUNDTRIM_GC_ROUNDS");
}
END_TEST

static const char *const bad_values[] = {"abc", "-3", "99999999999999999999", "", "1e3", "2 x"};

START_TEST(bad_interval_warns_once_naming_variable_and_default)
{
    const char *env[] = {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS", bad_values[_i], NULL};
    load(env);
    if (bad_values[_i][0] == '\0') { /* empty means unset */
        ck_assert_uint_eq(cfg.warning_count, 0);
        return;
    }
    ck_assert_uint_eq(cfg.warning_count, 1);
    ck_assert_uint_eq(cfg.gc_rounds, 1);
    ck_assert_ptr_nonnull(strstr(cfg.warnings[0], "NVFLARE_CLIENT_MEMORY_GC_ROUNDS="));
    ck_assert_ptr_nonnull(strstr(cfg.warnings[0], bad_values[_i]));
    ck_assert_ptr_nonnull(strstr(cfg.warnings[0], "using 1 (client role default)"));
}
END_TEST

START_TEST(explicit_glibc_settings_win)
{
    const char *legacy[] = {"MALLOC_ARENA_MAX", "8", "ROUNDTRIM_ARENA_MAX", "3", NULL};
    load(legacy);
    ck_assert_uint_eq(cfg.arena_max, 0);
    ck_assert_str_eq(roundtrim_config_source_text(&cfg, RT_OPT_ARENA_MAX), "MALLOC_ARENA_MAX");
    const char *tunables[] = {"GLIBC_TUNABLES",
                              "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1", NULL};
    load(tunables);
    ck_assert_uint_eq(cfg.arena_max, 0);
    char text[32];
    roundtrim_config_value_text(&cfg, RT_OPT_ARENA_MAX, text, sizeof text);
    ck_assert_str_eq(text, "glibc");
    const char *mmap[] = {"MALLOC_MMAP_THRESHOLD_", "65536", "ROUNDTRIM_MMAP_THRESHOLD", "131072",
                          NULL};
    load(mmap);
    ck_assert_uint_eq(cfg.mmap_threshold, 0);
}
END_TEST

START_TEST(signals_by_name_number_and_none)
{
    const char *usr2[] = {"ROUNDTRIM_ROUND_SIGNAL", "usr2", NULL};
    load(usr2);
    ck_assert_int_eq(cfg.round_signal, SIGUSR2);
    const char *num[] = {"ROUNDTRIM_ROUND_SIGNAL", "12", NULL};
    load(num);
    ck_assert_int_eq(cfg.round_signal, 12);
    const char *none[] = {"ROUNDTRIM_ROUND_SIGNAL", "none", NULL};
    load(none);
    ck_assert_int_eq(cfg.round_signal, 0);
    const char *kill[] = {"ROUNDTRIM_ROUND_SIGNAL", "SIGKILL", NULL};
    load(kill);
    ck_assert_int_eq(cfg.round_signal, SIGUSR1);
    ck_assert_uint_eq(cfg.warning_count, 1);
    char text[32];
    roundtrim_config_value_text(&cfg, RT_OPT_ROUND_SIGNAL, text, sizeof text);
    ck_assert_str_eq(text, "SIGUSR1");
}
END_TEST

static const struct {
    const char *text;
    int offset_from_rtmin; /* or, when negative, -1 - offset from SIGRTMAX */
} realtime_names[] = {
    {"RTMIN", 0},      {"SIGRTMIN", 0},    {"rtmin", 0},    {"RTMIN+1", 1}, {"SIGRTMIN+1", 1},
    {"sigrtmin+2", 2}, {"RTMIN+0", 0},     {" RTMIN+3", 3}, {"RTMAX", -1},  {"SIGRTMAX", -1},
    {"rtmax-1", -2},   {"SIGRTMAX-2", -3}, {"RTMAX-0", -1}, {"RtMaX", -1},
};

START_TEST(realtime_signals_by_name)
{
    const char *env[] = {"ROUNDTRIM_ROUND_SIGNAL", realtime_names[_i].text, NULL};
    load(env);
    int off = realtime_names[_i].offset_from_rtmin;
    int want = off >= 0 ? SIGRTMIN + off : SIGRTMAX + 1 + off;
    ck_assert_msg(cfg.round_signal == want, "%s gave %d, not %d", realtime_names[_i].text,
                  cfg.round_signal, want);
    ck_assert_uint_eq(cfg.warning_count, 0);
    ck_assert(roundtrim_config_is_explicit(&cfg, RT_OPT_ROUND_SIGNAL));
}
END_TEST

static const char *const bad_realtime[] = {
    "RTMIN+100",
    "RTMAX-100",
    "RTMIN-1",
    "RTMAX+1",
    "RTMIN+",
    "RTMAX-",
    "RTMIN+ 1",
    "RTMIN+1 ",
    "RTMIN+1x",
    "RTMIN++1",
    "RTMIN+-1",
    "RTMIN1",
    "RTMID",
    "SIGRT",
    "RT",
    "SIGSIGRTMIN",
    "RTMIN+99999999999999999999",
    "RTMIN+0x1",
    "RTMAX-64",
    "RTMIN+64",
};

START_TEST(realtime_names_out_of_range_warn_and_keep_sigusr1)
{
    const char *env[] = {"ROUNDTRIM_ROUND_SIGNAL", bad_realtime[_i], NULL};
    load(env);
    ck_assert_int_eq(cfg.round_signal, SIGUSR1);
    ck_assert_uint_eq(cfg.warning_count, 1);
    char want[128];
    snprintf(want, sizeof want, "ROUNDTRIM_ROUND_SIGNAL=%s is not valid", bad_realtime[_i]);
    ck_assert_msg(strstr(cfg.warnings[0], want) != NULL, "warning: %s", cfg.warnings[0]);
    ck_assert_ptr_nonnull(strstr(cfg.warnings[0], "using SIGUSR1"));
    ck_assert_ptr_null(strchr(cfg.warnings[0], '\n'));
}
END_TEST

START_TEST(every_realtime_signal_has_its_names_and_no_more)
{
    int span = SIGRTMAX - SIGRTMIN;
    char text[32];
    int sig;
    for (int n = 0; n <= span; n++) {
        snprintf(text, sizeof text, "RTMIN+%d", n);
        ck_assert(roundtrim_parse_signal(text, &sig));
        ck_assert_int_eq(sig, SIGRTMIN + n);
        snprintf(text, sizeof text, "SIGRTMAX-%d", n);
        ck_assert(roundtrim_parse_signal(text, &sig));
        ck_assert_int_eq(sig, SIGRTMAX - n);
        /* the number names the same signal */
        snprintf(text, sizeof text, "%d", SIGRTMIN + n);
        ck_assert(roundtrim_parse_signal(text, &sig));
        ck_assert_int_eq(sig, SIGRTMIN + n);
    }
    sig = -7;
    snprintf(text, sizeof text, "RTMIN+%d", span + 1);
    ck_assert(!roundtrim_parse_signal(text, &sig));
    snprintf(text, sizeof text, "RTMAX-%d", span + 1);
    ck_assert(!roundtrim_parse_signal(text, &sig));
    ck_assert_int_eq(sig, -7); /* untouched on refusal */
}
END_TEST

START_TEST(realtime_range_is_the_one_given)
{
    /* A C library that keeps more real-time signals for itself: 38..60. */
    int sig = 0;
    ck_assert(roundtrim_parse_signal_in("RTMIN", 38, 60, &sig));
    ck_assert_int_eq(sig, 38);
    ck_assert(roundtrim_parse_signal_in("RTMIN+22", 38, 60, &sig));
    ck_assert_int_eq(sig, 60);
    ck_assert(!roundtrim_parse_signal_in("RTMIN+23", 38, 60, &sig));
    ck_assert(roundtrim_parse_signal_in("sigrtmax", 38, 60, &sig));
    ck_assert_int_eq(sig, 60);
    ck_assert(roundtrim_parse_signal_in("RTMAX-22", 38, 60, &sig));
    ck_assert_int_eq(sig, 38);
    ck_assert(!roundtrim_parse_signal_in("RTMAX-23", 38, 60, &sig));
    ck_assert(!roundtrim_parse_signal_in("35", 38, 60, &sig));
    ck_assert(roundtrim_parse_signal_in("40", 38, 60, &sig));
    ck_assert_int_eq(sig, 40);
    ck_assert(!roundtrim_parse_signal_in("61", 38, 60, &sig));
    /* the classic names do not depend on the range */
    ck_assert(roundtrim_parse_signal_in("USR2", 38, 60, &sig));
    ck_assert_int_eq(sig, SIGUSR2);
    /* no real-time signals at all */
    ck_assert(!roundtrim_parse_signal_in("RTMIN", 1, 0, &sig));
    ck_assert(!roundtrim_parse_signal_in("RTMAX", 1, 0, &sig));
}
END_TEST

START_TEST(cuda_empty_cache_alias_and_booleans)
{
    const char *env[] = {"NVFLARE_CUDA_EMPTY_CACHE", "True", NULL};
    load(env);
    ck_assert(cfg.cuda_empty_cache);
    const char *bad[] = {"NVFLARE_CUDA_EMPTY_CACHE", "maybe", NULL};
    load(bad);
    ck_assert(!cfg.cuda_empty_cache);
    ck_assert_uint_eq(cfg.warning_count, 1);
    ck_assert_ptr_nonnull(strstr(cfg.warnings[0], "expected true or false"));
}
END_TEST

START_TEST(sampling_is_wanted_only_when_asked_for)
{
    const char *interval[] = {"ROUNDTRIM_INTERVAL_S", "60", NULL};
    load(interval);
    ck_assert(roundtrim_config_wants_sampling(&cfg));
    const char *pressure[] = {"ROUNDTRIM_PRESSURE_CLEAN", "80", NULL};
    load(pressure);
    ck_assert(roundtrim_config_wants_sampling(&cfg));
    ck_assert_uint_eq(cfg.pressure_clean, 80);
}
END_TEST

START_TEST(worker_starts_early_only_when_asked)
{
    load(NULL);
    ck_assert(!roundtrim_config_starts_worker_early(&cfg));
    const char *eager[] = {"ROUNDTRIM_EAGER_WORKER", "yes", NULL};
    load(eager);
    ck_assert(roundtrim_config_starts_worker_early(&cfg));
    const char *interval[] = {"ROUNDTRIM_INTERVAL_S", "5", NULL};
    load(interval);
    ck_assert(roundtrim_config_starts_worker_early(&cfg));
}
END_TEST

START_TEST(many_bad_values_never_overflow_the_warning_list)
{
    const char *env[] = {"ROUNDTRIM_GC_ROUNDS",
                         "x",
                         "ROUNDTRIM_ROLE",
                         "x",
                         "ROUNDTRIM_DISABLE",
                         "x",
                         "ROUNDTRIM_ROUND_SIGNAL",
                         "x",
                         "ROUNDTRIM_ARENA_MAX",
                         "x",
                         "ROUNDTRIM_MMAP_THRESHOLD",
                         "x",
                         "ROUNDTRIM_CUDA_EMPTY_CACHE",
                         "x",
                         "ROUNDTRIM_PY_GC",
                         "x",
                         "ROUNDTRIM_INTERVAL_S",
                         "x",
                         "ROUNDTRIM_PRESSURE_WARN",
                         "x",
                         "ROUNDTRIM_SAMPLE_MS",
                         "x",
                         NULL};
    load(env);
    /* one warning for each bad variable, none dropped */
    ck_assert_uint_eq(cfg.warning_count, 11);
    bool named = false;
    for (unsigned i = 0; i < cfg.warning_count; i++)
        named = named || strstr(cfg.warnings[i], "ROUNDTRIM_SAMPLE_MS=x") != NULL;
    ck_assert(named);
    ck_assert_int_eq(cfg.role, RT_ROLE_CLIENT);
    ck_assert_uint_eq(cfg.sample_ms, 1000);
}
END_TEST

/* The warning lines are not cleared between loads: only their count says which are there. */
START_TEST(a_config_loaded_again_keeps_no_earlier_warning)
{
    const char *bad[] = {"ROUNDTRIM_INTERVAL_S", "soon", NULL};
    load(bad);
    ck_assert_uint_eq(cfg.warning_count, 1);
    load(NULL);
    ck_assert_uint_eq(cfg.warning_count, 0);
    ck_assert_uint_eq(cfg.interval_s, 0);
    load(bad);
    ck_assert_uint_eq(cfg.warning_count, 1);
    ck_assert(strstr(cfg.warnings[0], "ROUNDTRIM_INTERVAL_S=soon") != NULL);
}
END_TEST

START_TEST(versions_read_major_and_minor_from_the_front)
{
    static const struct {
        const char *text;
        long major, minor;
    } cases[] = {{"2.36", 2, 36}, {"3.11.4+", 3, 11}, {"2.17-ubuntu", 2, 17},
                 {"2", 2, 0},     {"2.", 2, 0},       {"", 0, 0},
                 {"x.1", 0, 0},   {"10.0rc1", 10, 0}, {"1234567890123.5", 123456789, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long major = -1, minor = -1;
        roundtrim_parse_version(cases[i].text, &major, &minor);
        ck_assert_msg(major == cases[i].major && minor == cases[i].minor, "%s: %ld.%ld",
                      cases[i].text, major, minor);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, table_rows_match_their_ids);
    tcase_add_test(tc, versions_read_major_and_minor_from_the_front);
    tcase_add_test(tc, role_is_read_before_what_it_decides);
    tcase_add_test(tc, rows_locate_their_values);
    tcase_add_test(tc, parsed_defaults_equal_the_table_text);
    tcase_add_test(tc, default_text_says_roles_notes_and_unset);
    tcase_add_test(tc, defaults_are_the_client_role);
    tcase_add_test(tc, server_role_cleans_every_fifth_round_with_four_arenas);
    tcase_add_test(tc, nvflare_interval_applies_to_clients_only);
    tcase_add_test(tc, own_variable_wins_over_alias);
    tcase_add_loop_test(tc, bad_interval_warns_once_naming_variable_and_default, 0,
                        sizeof bad_values / sizeof bad_values[0]);
    tcase_add_test(tc, explicit_glibc_settings_win);
    tcase_add_test(tc, signals_by_name_number_and_none);
    tcase_add_loop_test(tc, realtime_signals_by_name, 0,
                        sizeof realtime_names / sizeof realtime_names[0]);
    tcase_add_loop_test(tc, realtime_names_out_of_range_warn_and_keep_sigusr1, 0,
                        sizeof bad_realtime / sizeof bad_realtime[0]);
    tcase_add_test(tc, every_realtime_signal_has_its_names_and_no_more);
    tcase_add_test(tc, realtime_range_is_the_one_given);
    tcase_add_test(tc, cuda_empty_cache_alias_and_booleans);
    tcase_add_test(tc, sampling_is_wanted_only_when_asked_for);
    tcase_add_test(tc, worker_starts_early_only_when_asked);
    tcase_add_test(tc, many_bad_values_never_overflow_the_warning_list);
    tcase_add_test(tc, a_config_loaded_again_keeps_no_earlier_warning);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
