#include "runtime/core/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "runtime/core/clock.h"
#include "runtime/core/safe_file.h"
#include "runtime/core/stderr_hold.h"

const char roundtrim_nothing_to_do[] = "nothing_to_do";

static struct roundtrim_config config;
static double start_ts;
static bool active;

/* The strings the settings point at are copied: the program may change its environment later. */
static char string_store[16384];
static size_t string_used;

static const char *keep_string(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    if (string_used + n > sizeof string_store)
        return NULL;
    char *copy = memcpy(string_store + string_used, s, n);
    string_used += n;
    return copy;
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

static const char *env_lookup(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

bool roundtrim_settings_load(void)
{
    start_ts = roundtrim_wall_seconds();
    /* Setuid, setgid and file-capability programs: the caller's environment must have no effect
     * on them, so nothing is read from it. */
    if (getauxval(AT_SECURE))
        return false;
    roundtrim_config_load(&config, env_lookup, NULL);
    config.log_path = keep_string(config.log_path);
    config.py_hook = keep_string(config.py_hook);
    config.prom_file = keep_string(config.prom_file);
    config.cgroup_dir = keep_string(config.cgroup_dir);
    for (unsigned i = 0; i < config.warning_count; i++)
        roundtrim_warn(config.warnings[i]);
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
