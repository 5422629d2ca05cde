/* The "sites" record written after each round record when sampling runs: the sites that
 * allocated during the round and still hold it, and the sites that hold the most (worker). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_SITES_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_SITES_RECORD_H

#include <stdint.h>

/* The most bytes a sites record takes: the longest record the library writes (the report allows
 * a line four times this). */
#define ROUNDTRIM_SITES_RECORD_MAX (512 * 1024)
/* The sites in each of the record's lists, at most. */
#define ROUNDTRIM_SITES_TOP 10

/* The record of the rounds first..last (one, or a merged run), ended at the boundary of `last`.
 * Writes nothing when sampling is off; forgets freed samples that only those rounds needed. */
void roundtrim_sites_record(uint64_t first, uint64_t last, double ts);

/* A fork child has written no record: its first one counts everything live as grown. */
void roundtrim_sites_record_fork_child(void);

#endif
