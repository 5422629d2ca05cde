#include "runtime/output/pressure_record.h"

#include <unistd.h>

#include "policy/cleanup_actions.h"
#include "policy/json_writer.h"
#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/output/log_writer.h"

void roundtrim_pressure_record(const char *level, const struct roundtrim_mem_limit *lim,
                               const struct roundtrim_round_record *cleaned)
{
    char line[2048];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, "pressure", getpid(),
                               roundtrim_wall_seconds());
    roundtrim_json_str(&j, "level", level);
    roundtrim_json_u64(&j, "used_bytes", lim->used);
    roundtrim_json_u64(&j, "limit_bytes", lim->limit);
    roundtrim_json_u64(&j, "percent", roundtrim_pressure_percent(lim->used, lim->limit));
    roundtrim_json_str(&j, "limit_source", lim->from_cgroup ? "cgroup" : "MemTotal");
    if (cleaned) {
        roundtrim_json_u64(&j, "rss_before", cleaned->rss_before);
        roundtrim_json_u64(&j, "rss_after", cleaned->rss_after);
        roundtrim_json_actions(&j, "cleanup", cleaned->actions);
        roundtrim_json_u64(&j, "cleanup_us", cleaned->cleanup_us);
    }
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}
