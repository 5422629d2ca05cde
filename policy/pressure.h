/* Memory-pressure decisions: when a sample of used memory against the limit deserves a warning
 * record or an immediate cleanup. Pure: the caller supplies the numbers and the clock. */
#ifndef ROUNDTRIM_POLICY_PRESSURE_H
#define ROUNDTRIM_POLICY_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/options.h"

struct roundtrim_pressure {
    bool above_warn; /* a warning was logged for the current crossing */
    bool cleaned;    /* a pressure cleanup ran at least once */
    uint64_t last_clean_ms;
};

enum {
    RT_PRESSURE_WARN = 1u << 0,  /* log a pressure record (once per crossing) */
    RT_PRESSURE_CLEAN = 1u << 1, /* clean up now */
};

/* The pressure record's level: a warning, or the cleanup the pressure started. */
#define RT_PRESSURE_LEVEL_WARN  "warn"
#define RT_PRESSURE_LEVEL_CLEAN "clean"

/* Percent of limit used, 0 when the limit is unknown. */
unsigned roundtrim_pressure_percent(uint64_t used, uint64_t limit);

/* The actions (RT_PRESSURE_* bits) a sample calls for; updates the state. A crossing ends when
 * use falls 2 points below the warning line, so a level hovering at the line logs once. */
unsigned roundtrim_pressure_update(struct roundtrim_pressure *st,
                                   const struct roundtrim_config *cfg, uint64_t used,
                                   uint64_t limit, uint64_t now_ms);

/* Whether round number `round` (1-based) cleans up under the configured interval. */
bool roundtrim_round_cleans(const struct roundtrim_config *cfg, uint64_t round);

#endif
