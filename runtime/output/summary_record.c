#include "runtime/output/summary_record.h"

#include "policy/record_put.h"
#include "policy/round_record.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/boundary/signal_rounds.h"
#include "runtime/core/clock.h"
#include "runtime/output/log_writer.h"
#include "runtime/python/round_hook.h"

/* The malloc family's counts: the round record's traffic keys, with its null. */
static void put_TRAFFIC(struct roundtrim_json *j, const char *key, struct roundtrim_traffic t)
{
    (void)key;
    roundtrim_json_traffic(j, &t, roundtrim_allocator_counts_skipped());
}

static void put_HOOK_LIST(struct roundtrim_json *j, const char *key, enum roundtrim_hook_list which)
{
    roundtrim_py_hooks_list_json(j, key, which);
}

void roundtrim_summary_record(const char *event, const struct roundtrim_summary *sum)
{
    struct roundtrim_summary full = *sum;
    roundtrim_counters_total(&full.traffic);
    full.signal_rounds_off = roundtrim_signal_rounds_off_take();
    const struct roundtrim_summary *s = &full;
    char line[8192];
    struct roundtrim_json j, *rt_out = &j;
    roundtrim_log_record_begin(&j, line, sizeof line, event, roundtrim_wall_seconds());
#define RT_EVENT_FIELD RT_PUT_ROW
#include "runtime/output/summary_fields.def"
    roundtrim_log_record_write(&j);
}
