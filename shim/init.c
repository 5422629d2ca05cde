/* The library's constructor. The order matters: the allocator after roundtrim is found first
 * (everything below may allocate), then libc's signal functions, then the settings; the round
 * signal's handler goes in only where roundtrim is active. */
#include "runtime/next_alloc.h"
#include "runtime/state.h"
#include "shim/signal_hooks.h"

__attribute__((constructor)) static void roundtrim_start(void)
{
    roundtrim_next_alloc_resolve();
    roundtrim_signal_hooks_resolve();
    if (!roundtrim_state_start())
        return;
    int sig = roundtrim_config()->round_signal;
    if (sig)
        roundtrim_signal_source_install(sig);
    roundtrim_state_start_sources();
}
