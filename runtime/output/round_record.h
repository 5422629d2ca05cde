/* The round record, one a round: formatted from policy/round_fields.def (policy/round_record.c),
 * written here. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_ROUND_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_ROUND_RECORD_H

#include <stdbool.h>

struct roundtrim_round_record;

/* Writes the round's record. False when the log was asked for (ROUNDTRIM_LOG) and could not take
 * it: a round unrecorded. */
bool roundtrim_round_record_write(const struct roundtrim_round_record *r);

#endif
