/* ROUNDTRIM_PROM_FILE: rewritten atomically (temporary file, then rename) after each round. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_METRICS_FILE_H
#define ROUNDTRIM_RUNTIME_OUTPUT_METRICS_FILE_H

#include <stdint.h>

#include "policy/diagnosis.h"

struct roundtrim_round_record;

void roundtrim_metrics_file_update(const struct roundtrim_round_record *r, uint64_t rounds,
                                   uint64_t cleanups, const struct roundtrim_diagnosis *diagnosis);

void roundtrim_metrics_file_fork_child(void);

#endif
