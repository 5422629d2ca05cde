/* The Prometheus text exposition of a process's latest round, for node_exporter's textfile
 * collector. Pure: formats into a caller's buffer. */
#ifndef ROUNDTRIM_POLICY_PROM_FORMAT_H
#define ROUNDTRIM_POLICY_PROM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "policy/round_record.h"

struct roundtrim_diagnosis;

struct roundtrim_prom_input {
    int pid;
    const char *role;
    const char *process;                       /* short program name */
    const struct roundtrim_round_record *last; /* the round just finished */
    const struct roundtrim_traffic *total;     /* cumulative since start */
    uint64_t rounds, cleanups;
    uint64_t released_bytes_total; /* sum of rss_before - rss_after over cleanups */
    uint64_t cuda_alloc_bytes_total, cuda_free_bytes_total;
    const struct roundtrim_diagnosis *diagnosis; /* the latest, or NULL */
};

/* Returns the length written, 0 if it did not fit. */
size_t roundtrim_prom_format(const struct roundtrim_prom_input *in, char *buf, size_t cap);

#endif
