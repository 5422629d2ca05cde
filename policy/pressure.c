#include "policy/pressure.h"

#define REARM_POINTS 2

unsigned roundtrim_pressure_percent(uint64_t used, uint64_t limit)
{
    if (limit == 0)
        return 0;
    /* used * 100 can overflow only past 184 PB: divide first in that case */
    if (used > UINT64_MAX / 100)
        return (unsigned)(used / (limit / 100 ? limit / 100 : 1));
    return (unsigned)(used * 100 / limit);
}

unsigned roundtrim_pressure_update(struct roundtrim_pressure *st,
                                   const struct roundtrim_config *cfg, uint64_t used,
                                   uint64_t limit, uint64_t now_ms)
{
    if (limit == 0)
        return 0;
    unsigned pct = roundtrim_pressure_percent(used, limit);
    unsigned actions = 0;
    if (cfg->pressure_warn > 0) {
        if (pct >= cfg->pressure_warn && !st->above_warn) {
            st->above_warn = true;
            actions |= RT_PRESSURE_WARN;
        } else if (st->above_warn && pct + REARM_POINTS < cfg->pressure_warn) {
            st->above_warn = false;
        }
    }
    if (cfg->pressure_clean > 0 && pct >= cfg->pressure_clean) {
        uint64_t gap_ms = cfg->pressure_gap_s * 1000;
        if (!st->cleaned || now_ms - st->last_clean_ms >= gap_ms) {
            st->cleaned = true;
            st->last_clean_ms = now_ms;
            actions |= RT_PRESSURE_CLEAN;
        }
    }
    return actions;
}

bool roundtrim_round_cleans(const struct roundtrim_config *cfg, uint64_t round)
{
    return cfg->gc_rounds > 0 && round > 0 && round % cfg->gc_rounds == 0;
}
