#include "runtime/state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "runtime/allocator_ops.h"
#include "runtime/app_threads.h"
#include "runtime/clock.h"
#include "runtime/cuda_track.h"
#include "runtime/log_writer.h"
#include "runtime/metrics_file.h"
#include "runtime/python_bridge.h"
#include "runtime/round.h"
#include "runtime/safe_file.h"
#include "runtime/sampler.h"
#include "runtime/sites_record.h"
#include "runtime/stderr_hold.h"
#include "runtime/thread_counters.h"
#include "runtime/worker.h"
#include "runtime/vm_child.h"

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

static void fork_prepare(void)
{
    roundtrim_sampler_fork_prepare();
    roundtrim_counters_fork_prepare();
}

static void fork_parent(void)
{
    roundtrim_counters_fork_parent();
    roundtrim_sampler_fork_parent();
}

/* The child is a process of its own: its records carry its pid, its rounds start at 1, and it
 * starts its own worker when it needs one. */
static void fork_child(void)
{
    start_ts = roundtrim_wall_seconds();
    roundtrim_app_threads_fork_child();
    roundtrim_stderr_fork_child();
    roundtrim_counters_fork_child();
    roundtrim_worker_fork_child();
    roundtrim_round_fork_child();
    roundtrim_log_fork_child();
    roundtrim_metrics_file_fork_child();
    roundtrim_cuda_fork_child();
    roundtrim_sampler_fork_child();
    roundtrim_sites_record_fork_child();
}

static void print_warnings(void)
{
    for (unsigned i = 0; i < config.warning_count; i++)
        roundtrim_warn(config.warnings[i]);
}

static void copy_strings(void)
{
    config.log_path = keep_string(config.log_path);
    config.py_hook = keep_string(config.py_hook);
    config.prom_file = keep_string(config.prom_file);
    config.cgroup_dir = keep_string(config.cgroup_dir);
}

/* An atexit handler, registered by the constructor: it runs after the program's own (registered
 * later) and before the libraries' destructors, while libcuda and the C++ runtime still work. */
static void roundtrim_stop(void)
{
    if (roundtrim_in_vm_child()) /* exit() in a vfork child: the state is the parent's */
        return;
    roundtrim_round_at_exit();
}

/* ROUNDTRIM_SITES: a sampler that cannot start says why, once, and the library goes on. */
static void start_sampler(void)
{
    const char *why = roundtrim_sampler_start(config.sites_sample);
    if (why) {
        char text[160];
        snprintf(text, sizeof text, "ROUNDTRIM_SITES=true: allocation sites are not sampled (%s)",
                 why);
        roundtrim_warn(text);
    }
}

bool roundtrim_state_start(void)
{
    start_ts = roundtrim_wall_seconds();
    /* Setuid, setgid and file-capability programs: the caller's environment must have no effect
     * on them, so nothing is read from it, nothing counted, started, opened or registered. */
    if (getauxval(AT_SECURE)) {
        roundtrim_counters_disable();
        return false;
    }
    roundtrim_config_load(&config, env_lookup, NULL);
    copy_strings();
    print_warnings();
    if (config.disabled) {
        roundtrim_counters_disable();
        return false;
    }
    roundtrim_allocator_detect();
    roundtrim_allocator_tune(&config);
    roundtrim_worker_init();
    if (config.sites)
        start_sampler();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    roundtrim_app_threads_start();
    roundtrim_stderr_hold_start();
    active = true;
    atexit(roundtrim_stop);
    return true;
}

void roundtrim_state_start_sources(void)
{
    roundtrim_python_init(config.py_hook);
    if (roundtrim_config_starts_worker_early(&config))
        roundtrim_worker_ensure();
}
