#include "runtime/lifecycle.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/cxx_callers.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/fd_guard.h"
#include "runtime/boundary/boundary.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/core/stderr_hold.h"
#include "runtime/core/vm_child.h"
#include "runtime/cuda/track.h"
#include "runtime/output/log_writer.h"
#include "runtime/output/metrics_file.h"
#include "runtime/output/no_rounds.h"
#include "runtime/output/sites_record.h"
#include "runtime/output/start_record.h"
#include "runtime/python/holders.h"
#include "runtime/python/api.h"
#include "runtime/python/bridge.h"
#include "runtime/python/gil.h"
#include "runtime/python/round_hook.h"
#include "runtime/rounds/round.h"
#include "runtime/rounds/worker.h"
#include "runtime/sites/sampler.h"
#include "runtime/threads/app_threads.h"

/* The descriptor guard first: the forking thread waits for the worker's reads holding none of
 * roundtrim's locks. */
static void fork_prepare(void)
{
    roundtrim_fd_guard_fork_prepare();
    roundtrim_sampler_fork_prepare();
    roundtrim_counters_fork_prepare();
}

static void fork_parent(void)
{
    roundtrim_counters_fork_parent();
    roundtrim_sampler_fork_parent();
    roundtrim_fd_guard_fork_parent();
}

/* The child is a process of its own: its records carry its pid, its rounds start at 1, and it
 * starts its own worker when it needs one. */
static void fork_child(void)
{
    roundtrim_settings_fork_child();
    roundtrim_cxx_callers_fork_child();
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
    roundtrim_python_holders_fork_child();
    roundtrim_fd_guard_fork_child();
    /* A Python process keeps its worker from the interpreter's start so that a round signal is
     * handled at once while it waits; its fork child (a multiprocessing worker blocked on its
     * queue) is a Python process too: it starts its own at its first allocation, which the
     * interpreter's own after-fork work makes. */
    roundtrim_py_gil_fork_child();
    if (roundtrim_worker_parent_had() && roundtrim_py_running())
        roundtrim_worker_start_soon();
}

/* An atexit handler, registered at start: it runs after the program's own (registered later)
 * and before the libraries' destructors, while libcuda and the C++ runtime still work. */
static void at_exit(void)
{
    if (roundtrim_in_vm_child()) /* exit() in a vfork child: the state is the parent's */
        return;
    /* A process that ended no round says so, rather than nothing: its hooks that never
     * attached, and in its log the no-rounds note once its first minutes have passed. */
    if (roundtrim_boundaries_seen() == 0)
        roundtrim_py_hooks_warn_unattached();
    roundtrim_no_rounds_write_when_due();
    roundtrim_round_at_exit();
}

/* ROUNDTRIM_SITES: a sampler that cannot start says why, once, and the library goes on. */
static void start_sampler(void)
{
    enum roundtrim_skip why = roundtrim_sampler_start(roundtrim_config()->sites_sample);
    if (why) {
        char text[160];
        snprintf(text, sizeof text, "ROUNDTRIM_SITES=true: allocation sites are not sampled (%s)",
                 roundtrim_skip_name(why));
        roundtrim_warn(text);
    }
}

bool roundtrim_lifecycle_start(void)
{
    /* Nothing is counted, started, opened or registered where roundtrim stays forwarding. */
    if (!roundtrim_settings_load()) {
        roundtrim_counters_disable();
        return false;
    }
    const struct roundtrim_config *config = roundtrim_config();
    roundtrim_allocator_detect();
    roundtrim_allocator_tune(config);
    roundtrim_worker_init();
    roundtrim_cgroup_dir_in_use(config->cgroup_dir); /* a bad one is said at start */
    if (config->sites)
        start_sampler();
    roundtrim_log_set_first_record(roundtrim_start_record_format);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    roundtrim_app_threads_start();
    roundtrim_stderr_hold_start();
    roundtrim_settings_activate();
    atexit(at_exit);
    return true;
}

void roundtrim_lifecycle_start_sources(void)
{
    const struct roundtrim_config *config = roundtrim_config();
    roundtrim_round_clock_start();
    /* A Python program is often idle between rounds (blocked in a join, waiting on a socket)
     * when its round signal comes: a handler cannot start a thread, so the worker starts with
     * the interpreter and the first round is handled at once, with its gc. */
    if (roundtrim_python_init(config->py_hook) || roundtrim_config_starts_worker_early(config))
        roundtrim_worker_ensure();
}
