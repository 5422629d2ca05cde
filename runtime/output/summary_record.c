#include "runtime/output/summary_record.h"

#include <unistd.h>

#include "policy/json_writer.h"
#include "policy/round_record.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/boundary/signal_rounds.h"
#include "runtime/core/clock.h"
#include "runtime/output/log_writer.h"
#include "runtime/python/hook.h"

void roundtrim_summary_record(const char *event, const struct roundtrim_summary *sum)
{
    struct roundtrim_traffic total;
    roundtrim_counters_total(&total);
    char line[8192];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, event, getpid(), roundtrim_wall_seconds());
    roundtrim_json_u64(&j, "rounds", sum->rounds);
    roundtrim_json_u64(&j, "rounds_unrecorded", sum->rounds_unrecorded);
    roundtrim_json_u64(&j, "cleanups", sum->cleanups);
    roundtrim_json_traffic(&j, &total, roundtrim_allocator_counts_skipped());
    roundtrim_json_u64(&j, "rss", sum->rss);
    roundtrim_json_u64(&j, "rss_peak", sum->rss_peak);
    roundtrim_py_hooks_exit_json(&j);
    const char *signal_off = roundtrim_signal_rounds_off_take();
    if (signal_off)
        roundtrim_json_str(&j, "signal_rounds_off", signal_off);
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}
