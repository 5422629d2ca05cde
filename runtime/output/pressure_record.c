#include "runtime/output/pressure_record.h"

#include <unistd.h>

#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/output/event_fields.h"
#include "runtime/output/log_writer.h"

void roundtrim_pressure_record(const char *level, const struct roundtrim_mem_limit *lim,
                               const struct roundtrim_round_record *c)
{
    char line[2048];
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, "pressure", getpid(),
                               roundtrim_wall_seconds());
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    RT_EVENT_PUT(&j, name, kind, present, value);
#include "runtime/output/pressure_fields.def"
    size_t n = roundtrim_json_end(&j);
    if (n > 0)
        roundtrim_log_write(line, n);
}
