/* Names under ROUNDTRIM_ that name nothing: which are known, which known one is nearest, and the
 * one warning line a misspelled variable gets. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "policy/option_names.h"
#include "policy/options.h"
#include "run_suite.h"

static bool known(const char *name)
{
    return roundtrim_variable_known(name, strlen(name));
}

START_TEST(every_name_of_the_option_table_is_known)
{
    for (int i = 0; i < RT_OPT_COUNT; i++)
        ck_assert_msg(known(roundtrim_options[i].name), "%s", roundtrim_options[i].name);
}
END_TEST

START_TEST(the_commands_own_variables_are_known)
{
    const char *names[] = {"ROUNDTRIM_LIB", "ROUNDTRIM_PYTHON", "ROUNDTRIM_PLOTTER",
                           "ROUNDTRIM_JEMALLOC_PATHS", "ROUNDTRIM_LOG_DIR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(known(names[i]), "%s", names[i]);
}
END_TEST

START_TEST(a_prefix_or_an_extension_of_a_name_is_not_known)
{
    ck_assert(!known("ROUNDTRIM_GC_ROUND"));
    ck_assert(!known("ROUNDTRIM_LOGS"));
    ck_assert(!known("ROUNDTRIM_"));
    ck_assert(!known("roundtrim_log"));
    ck_assert(roundtrim_variable_known("ROUNDTRIM_LOGS", 13)); /* its first 13 bytes */
}
END_TEST

static const struct {
    const char *typed, *meant;
} misspelled[] = {
    {"ROUNDTRIM_GC_ROUND", "ROUNDTRIM_GC_ROUNDS"},
    {"ROUNDTRIM_SITE", "ROUNDTRIM_SITES"},
    {"ROUNDTRIM_LOGS", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_PYHOOK", "ROUNDTRIM_PY_HOOK"},
    {"ROUNDTRIM_INTERVAL", "ROUNDTRIM_INTERVAL_S"},
    {"ROUNDTRIM_ARENAS_MAX", "ROUNDTRIM_ARENA_MAX"},
    {"ROUNDTRIM_ROUND_SIGANL", "ROUNDTRIM_ROUND_SIGNAL"},
    {"ROUNDTRIM_LIBS", "ROUNDTRIM_LIB"},
    /* by meaning, however far the spelling */
    {"ROUNDTRIM_LOGFILE", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_LOG_FILE", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_LOG_PATH", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_OUTPUT", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_METRICS_FILE", "ROUNDTRIM_PROM_FILE"},
    {"ROUNDTRIM_PROMETHEUS", "ROUNDTRIM_PROM_FILE"},
    {"ROUNDTRIM_EVERY_GC", "ROUNDTRIM_GC_ROUNDS"},
    {"ROUNDTRIM_PYTHON_HOOK", "ROUNDTRIM_PY_HOOK"},
    {"ROUNDTRIM_INTERVAL_SECONDS", "ROUNDTRIM_INTERVAL_S"},
    {"ROUNDTRIM_SIG", "ROUNDTRIM_ROUND_SIGNAL"},
};

START_TEST(the_nearest_known_name_is_the_one_meant)
{
    const char *typed = misspelled[_i].typed;
    ck_assert_str_eq(roundtrim_variable_closest(typed, strlen(typed)), misspelled[_i].meant);
}
END_TEST

START_TEST(a_misspelled_entry_gets_one_line_naming_it_and_the_nearest)
{
    char entry[128], line[256];
    snprintf(entry, sizeof entry, "%s=5", misspelled[_i].typed);
    ck_assert(roundtrim_unknown_variable_warning(entry, NULL, NULL, line, sizeof line));
    char want[256];
    snprintf(want, sizeof want,
             "%s is not a roundtrim variable and changes nothing; did you mean %s? (roundtrim env "
             "lists them)",
             misspelled[_i].typed, misspelled[_i].meant);
    ck_assert_str_eq(line, want);
}
END_TEST

START_TEST(known_and_foreign_entries_get_no_line)
{
    const char *quiet[] = {"ROUNDTRIM_GC_ROUNDS=5", "ROUNDTRIM_LOG=",
                           "ROUNDTRIM_LIB=/x.so",   "NVFLARE_CUDA_EMPTY_CACHE=1",
                           "MALLOC_ARENA_MAX=2",    "PATH=/bin",
                           "ROUNDTRIMX=1"};
    char line[256] = "untouched";
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
        ck_assert_msg(!roundtrim_unknown_variable_warning(quiet[i], NULL, NULL, line, sizeof line),
                      "%s", quiet[i]);
    ck_assert_str_eq(line, "untouched");
}
END_TEST

START_TEST(a_long_name_is_shown_by_its_start_and_the_line_fits)
{
    char entry[600], line[256];
    memset(entry, 'A', sizeof entry);
    memcpy(entry, "ROUNDTRIM_", 10);
    memcpy(entry + 500, "=1", 3);
    ck_assert(roundtrim_unknown_variable_warning(entry, NULL, NULL, line, sizeof line));
    ck_assert_uint_lt(strlen(line), sizeof line - 1);
    ck_assert(strncmp(line, entry, ROUNDTRIM_NAME_SHOWN) == 0);
    ck_assert(strncmp(line + ROUNDTRIM_NAME_SHOWN, "... is not a roundtrim variable", 31) == 0);
}
END_TEST

static const char *log_unset(void *ctx, const char *name)
{
    (void)ctx;
    return strcmp(name, "ROUNDTRIM_LOG") == 0 ? NULL : "set";
}

static const char *everything_set(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return "/var/log/rt.jsonl";
}

START_TEST(a_name_meant_for_an_unset_log_says_that_no_log_is_written)
{
    char line[256];
    ck_assert(roundtrim_unknown_variable_warning("ROUNDTRIM_LOGFILE=/x.jsonl", log_unset, NULL,
                                                 line, sizeof line));
    ck_assert_str_eq(line, "ROUNDTRIM_LOGFILE is not a roundtrim variable and changes nothing; "
                           "did you mean ROUNDTRIM_LOG (unset: no log is written)? (roundtrim "
                           "env lists them)");
    /* the log is set after all: nothing to add */
    ck_assert(roundtrim_unknown_variable_warning("ROUNDTRIM_LOGFILE=/x.jsonl", everything_set, NULL,
                                                 line, sizeof line));
    ck_assert(strstr(line, "did you mean ROUNDTRIM_LOG? ") != NULL);
    /* a variable with a default: its absence does something, nothing to add */
    ck_assert(roundtrim_unknown_variable_warning("ROUNDTRIM_GC_ROUND=2", log_unset, NULL, line,
                                                 sizeof line));
    ck_assert(strstr(line, "did you mean ROUNDTRIM_GC_ROUNDS? ") != NULL);
    ck_assert(roundtrim_unknown_variable_warning("ROUNDTRIM_METRICS=/m.prom", log_unset, NULL, line,
                                                 sizeof line));
    ck_assert(strstr(line, "did you mean ROUNDTRIM_PROM_FILE? ") != NULL);
}
END_TEST

START_TEST(a_name_alone_without_a_value_is_judged_too)
{
    char line[256];
    ck_assert(roundtrim_unknown_variable_warning("ROUNDTRIM_SITE", NULL, NULL, line, sizeof line));
    ck_assert(strstr(line, "did you mean ROUNDTRIM_SITES?") != NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("option_names");
    TCase *tc = tcase_create("option_names");
    tcase_add_test(tc, every_name_of_the_option_table_is_known);
    tcase_add_test(tc, the_commands_own_variables_are_known);
    tcase_add_test(tc, a_prefix_or_an_extension_of_a_name_is_not_known);
    tcase_add_loop_test(tc, the_nearest_known_name_is_the_one_meant, 0,
                        sizeof misspelled / sizeof misspelled[0]);
    tcase_add_loop_test(tc, a_misspelled_entry_gets_one_line_naming_it_and_the_nearest, 0,
                        sizeof misspelled / sizeof misspelled[0]);
    tcase_add_test(tc, known_and_foreign_entries_get_no_line);
    tcase_add_test(tc, a_long_name_is_shown_by_its_start_and_the_line_fits);
    tcase_add_test(tc, a_name_alone_without_a_value_is_judged_too);
    tcase_add_test(tc, a_name_meant_for_an_unset_log_says_that_no_log_is_written);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
