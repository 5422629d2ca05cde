#include "runtime/output/diagnosis_record.h"

#include "policy/diagnosis.h"
#include "runtime/core/clock.h"
#include "runtime/output/log_writer.h"

/* Worker only, or the exiting thread under the round lock: a static buffer. */
static char line[ROUNDTRIM_DIAGNOSIS_RECORD_MAX];

void roundtrim_diagnosis_record(uint64_t round, const struct roundtrim_diagnosis *d)
{
    struct roundtrim_json j;
    roundtrim_log_record_begin(&j, line, sizeof line, "diagnosis", roundtrim_wall_seconds());
    roundtrim_json_u64(&j, "round", round);
    roundtrim_diagnosis_json(&j, d);
    roundtrim_log_record_write(&j);
}
