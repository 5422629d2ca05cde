#include "runtime/boundary.h"

#include "runtime/export.h"
#include "runtime/round.h"
#include "runtime/state.h"
#include "runtime/worker.h"
#include "shim/next_alloc.h"

static const char *const source_names[ROUNDTRIM_SRC_COUNT] = {
    [ROUNDTRIM_SRC_SIGNAL] = "signal",     [ROUNDTRIM_SRC_CALL] = "call",
    [ROUNDTRIM_SRC_PYTHON] = "python",     [ROUNDTRIM_SRC_TIMER] = "timer",
    [ROUNDTRIM_SRC_PRESSURE] = "pressure",
};

const char *roundtrim_source_name(enum roundtrim_source src)
{
    return (unsigned)src < ROUNDTRIM_SRC_COUNT ? source_names[src] : "unknown";
}

void roundtrim_boundary(enum roundtrim_source src)
{
    if (!roundtrim_active())
        return;
    roundtrim_round_add_pending(src);
    if (roundtrim_worker_ensure())
        roundtrim_worker_wake();
}

void roundtrim_boundary_from_signal(void)
{
    roundtrim_round_add_pending(ROUNDTRIM_SRC_SIGNAL);
    if (roundtrim_worker_running())
        roundtrim_worker_wake();
    else {
        __atomic_store_n(&roundtrim_worker_start_wanted, 1, __ATOMIC_SEQ_CST);
        roundtrim_fast_path_suspend(); /* the next malloc or free takes the slow path */
    }
}

ROUNDTRIM_EXPORT void roundtrim_round_end(void)
{
    roundtrim_boundary(ROUNDTRIM_SRC_CALL);
}
