/* The library's constructor: the one place that says in which order roundtrim starts.
 *
 * 1. The fork-child pid record, so that its fork handler runs before every other of ours.
 * 2. The allocator after roundtrim: everything below may allocate.
 * 3. libc's functions that the hooks forward to and cannot look up where they are called
 *    (signal handlers, vfork children, exec and _exit).
 * 4. The settings and the runtime (runtime/lifecycle.c): nothing more where roundtrim stays pure
 *    forwarding (secure-exec, ROUNDTRIM_DISABLE).
 * 5. The round signal's handler, then the sources that may end a round at once (the Python
 *    hooks, an early worker). */
#include "runtime/alloc/next_alloc.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"
#include "runtime/lifecycle.h"
#include "shim/signal_hooks.h"
#include "shim/start.h"

static void start(void)
{
    roundtrim_vm_child_start();
    roundtrim_alloc_hooks_install();
    roundtrim_next_alloc_resolve();
    roundtrim_signal_hooks_resolve();
    roundtrim_exec_hooks_resolve();
    roundtrim_exit_hooks_resolve();
    roundtrim_namespace_hooks_resolve();
    roundtrim_mmap_hooks_resolve();
    if (!roundtrim_lifecycle_start())
        return;
    int sig = roundtrim_config()->round_signal;
    if (sig)
        roundtrim_signal_source_install(sig);
    roundtrim_lifecycle_start_sources();
}

__attribute__((constructor)) static void roundtrim_start(void)
{
    start();
    /* What the start looked up and did not find (another allocator's extensions, libpython in a
     * process without it) leaves nothing for the program's dlerror. */
    roundtrim_dlerror_forget();
}
