/* The Prometheus text exposition of a process's latest round, for node_exporter's textfile
 * collector. Pure: formats into a caller's buffer. */
#ifndef ROUNDTRIM_POLICY_PROM_FORMAT_H
#define ROUNDTRIM_POLICY_PROM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "policy/skip_reason.h"
#include "policy/traffic.h"

struct roundtrim_round_record;

struct roundtrim_diagnosis;

/* Cleanup steps that were due and did not run, counted per step and reason since the process
 * started: the round records' skip reasons of the steps (RT_STEP rows of
 * policy/round_fields.def), a series each in the order first seen. The series are bounded: past
 * the table's rows, further pairs are counted under action and reason "other". */
#define ROUNDTRIM_PROM_SKIP_ROWS 24

/* The cleanup's steps, as the RT_STEP rows list them. */
enum roundtrim_cleanup_step {
#define RT_STEP(step, skip, label) RT_CLEANUP_STEP_##step,
#include "policy/round_fields.def"
    RT_CLEANUP_STEP_COUNT,
    RT_CLEANUP_STEP_OTHER = RT_CLEANUP_STEP_COUNT /* the row of the pairs that found none */
};

struct roundtrim_skip_row {
    enum roundtrim_cleanup_step step;
    enum roundtrim_skip why; /* RT_SKIP_NONE in the "other" row */
    uint64_t count;
};

struct roundtrim_skip_counts {
    struct roundtrim_skip_row row[ROUNDTRIM_PROM_SKIP_ROWS];
    size_t n;
};

/* Adds the skips one round record says. */
void roundtrim_skip_counts_add(struct roundtrim_skip_counts *c,
                               const struct roundtrim_round_record *r);

struct roundtrim_prom_input {
    int pid;
    const char *role;
    const char *process;  /* short program name */
    const char *hostname; /* the host name (a container's own); NULL: no hostname label */
    const struct roundtrim_round_record *last; /* the round just finished */
    const struct roundtrim_traffic *total;     /* cumulative since start */
    uint64_t rounds, cleanups;
    uint64_t released_bytes_total; /* sum of rss_before - rss_after over cleanups */
    uint64_t cleanup_cpu_us_total; /* sum of the rounds' cleanup_cpu_us */
    uint64_t cuda_alloc_bytes_total, cuda_free_bytes_total;
    const struct roundtrim_diagnosis *diagnosis; /* the latest, or NULL */
    const char
        *framework; /* whose round hooks attached ("nvflare", "flower", "appfl"); NULL: none */
    const struct roundtrim_skip_counts *skips; /* NULL: none yet */
};

/* Returns the length written, 0 if it did not fit. */
size_t roundtrim_prom_format(const struct roundtrim_prom_input *in, char *buf, size_t cap);

#endif
