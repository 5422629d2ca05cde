#include "runtime/output/pressure_record.h"

#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/core/clock.h"
#include "policy/record_put.h"
#include "runtime/core/proc_mem.h"
#include "runtime/output/log_writer.h"

void roundtrim_pressure_record(const struct roundtrim_mem_limit *lim,
                               const struct roundtrim_round_record *c)
{
    char line[2048];
    struct roundtrim_json j, *rt_out = &j;
    roundtrim_log_record_begin(&j, line, sizeof line, "pressure", roundtrim_wall_seconds());
#define RT_EVENT_FIELD RT_PUT_ROW
#include "runtime/output/pressure_fields.def"
    roundtrim_log_record_write(&j);
}
