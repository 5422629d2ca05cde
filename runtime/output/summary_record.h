/* The last record of a program image: "exit", or "exec" when another program replaces it. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_SUMMARY_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_SUMMARY_RECORD_H

#include <stdint.h>

#include "policy/traffic.h"

/* What the record says (runtime/output/summary_fields.def: its keys). */
struct roundtrim_summary {
    uint64_t rounds;            /* rounds recorded in the log */
    uint64_t rounds_unrecorded; /* boundaries seen that have no record */
    uint64_t cleanups;          /* cleanup rounds that ran an action */
    uint64_t rss, rss_peak;
    struct roundtrim_traffic traffic; /* read by the writer: the totals since the start */
    const char *signal_rounds_off;    /* read by the writer */
};

/* Writes it; the caller fills the counts, the writer reads the allocation totals and why signal
 * rounds stopped, when they did. */
void roundtrim_summary_record(const char *event, const struct roundtrim_summary *sum);

#endif
