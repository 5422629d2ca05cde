#include "runtime/core/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "policy/option_names.h"
#include "runtime/core/clock.h"
#include "runtime/core/env_scan.h"
#include "runtime/core/parent_said.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/stderr_hold.h"

static struct roundtrim_config config;
static double start_ts;
static bool active;

/* The strings the settings point at are copied when they come from the environment: the program
 * may change it later. A default is the option table's own text, which never changes. */
static char string_store[16384];
static size_t string_used;

static const char *keep_string(enum roundtrim_option_id id, const char *s)
{
    if (!s || config.setting[id].source != RT_FROM_VARIABLE)
        return s;
    size_t n = strlen(s) + 1;
    if (string_used + n > sizeof string_store)
        return NULL;
    char *copy = memcpy(string_store + string_used, s, n);
    string_used += n;
    return copy;
}

/* Every text option set by a variable, copied out of the environment. */
static void keep_strings(void)
{
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        enum roundtrim_option_id id = (enum roundtrim_option_id)i;
        if (roundtrim_options[id].type != RT_TYPE_STRING)
            continue;
        const char **value = roundtrim_config_field(&config, id);
        *value = keep_string(id, *value);
    }
}

const struct roundtrim_config *roundtrim_config(void)
{
    return &config;
}

double roundtrim_start_time(void)
{
    return start_ts;
}

bool roundtrim_active(void)
{
    return active;
}

void roundtrim_warn(const char *text)
{
    char line[4600];
    int n = snprintf(line, sizeof line, "roundtrim: %s\n", text);
    if (n > (int)sizeof line - 1) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    /* One warning, one line: values copied from the environment may hold newlines. */
    for (int i = 0; i < n - 1; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    if (n > 0) {
        const char *bufs[1] = {line};
        size_t len = (size_t)n;
        roundtrim_write_quiet(roundtrim_stderr_fd(), bufs, &len, 1);
    }
}

void roundtrim_warn_once_errno(const char *text, int err)
{
    static const char *said;
    if (said == text)
        return;
    said = text;
    char line[600];
    snprintf(line, sizeof line, "%s: %s", text, strerror(err));
    roundtrim_warn(line);
}

/* getenv(name) for the names the option table reads, from the start's one pass over the
 * environment (a getenv per option walked the whole environment some thirty times in every
 * process); the first entry of that name wins, as there. */
static const char *env_lookup(void *ctx, const char *name)
{
    (void)ctx;
    const struct roundtrim_env_scan *env = roundtrim_env_scan();
    if (env->overflow)
        return getenv(name);
    for (unsigned i = 0; i < env->kept_count; i++) {
        const char *e = env->kept[i];
        const char *n = name;
        while (*n && *e == *n) {
            e++;
            n++;
        }
        if (!*n && *e == '=')
            return e + 1;
    }
    return NULL;
}

/* The settings' warnings are the same in every process started with the same variables: the
 * parent that said them to the same stderr said them for the whole process tree. Asked once,
 * and only when there is something to say. */
void roundtrim_warn_setting(const char *text)
{
    static int parent_said = -1;
    if (parent_said < 0)
        parent_said = roundtrim_parent_said_it();
    if (!parent_said)
        roundtrim_warn(text);
}

/* Each of our names that names nothing gets a line: a misspelled variable would otherwise change
 * nothing without a word. Only the names kept at start are looked at, so this costs nothing in
 * a process that sets none. */
static void warn_unknown_names(void)
{
    const struct roundtrim_env_scan *env = roundtrim_env_scan();
    char line[ROUNDTRIM_WARNING_LEN];
    for (unsigned i = 0; i < env->kept_count; i++)
        if (env->kept[i][0] == 'R' &&
            roundtrim_unknown_variable_warning(env->kept[i], env_lookup, NULL, line, sizeof line))
            roundtrim_warn_setting(line);
}

bool roundtrim_settings_load(void)
{
    start_ts = roundtrim_wall_seconds();
    /* Setuid, setgid and file-capability programs: the caller's environment must have no effect
     * on them, so nothing is read from it. */
    if (getauxval(AT_SECURE))
        return false;
    roundtrim_config_load(&config, env_lookup, NULL);
    keep_strings();
    for (unsigned i = 0; i < config.warning_count; i++)
        roundtrim_warn_setting(config.warnings[i]);
    warn_unknown_names();
    return !config.disabled;
}

void roundtrim_settings_activate(void)
{
    active = true;
}

void roundtrim_settings_fork_child(void)
{
    start_ts = roundtrim_wall_seconds();
}
