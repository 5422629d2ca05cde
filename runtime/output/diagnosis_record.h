/* The "diagnosis" record: the verdict on the latest rounds (keys: policy/diagnosis_fields.def). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_DIAGNOSIS_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_DIAGNOSIS_RECORD_H

#include <stdint.h>

struct roundtrim_diagnosis;

/* Writes the diagnosis made at round `round`. Worker only, or the exiting thread under the round
 * lock. */
void roundtrim_diagnosis_record(uint64_t round, const struct roundtrim_diagnosis *d);

#endif
