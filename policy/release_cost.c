#include "policy/release_cost.h"

/* The units of a first call, before anything is learnt: small enough to end at once on the
 * dearest host measured (64 one-page ranges at 100 us each: 6.4 ms), and a reading. */
#define FIRST_CALL_UNITS 64
/* One unit at least: every call gives back one range. */
#define MIN_UNITS 1

uint64_t roundtrim_release_units(uint64_t pages)
{
    return 1 + pages / ROUNDTRIM_RELEASE_PAGES_PER_UNIT;
}

void roundtrim_release_cost_learn(struct roundtrim_release_cost *c, uint64_t units,
                                  uint64_t took_us)
{
    if (units == 0)
        return;
    uint64_t rate = took_us * 256 / units;
    if (rate == 0)
        rate = 1; /* measured, and cheap: 0 means unknown */
    /* A running mean weighing the newest call a quarter: a slow reading moves it, the next
     * fast ones bring it back. */
    c->unit_us_x256 = c->unit_us_x256 ? (c->unit_us_x256 * 3 + rate) / 4 : rate;
    c->call_us_mean = c->calls ? (c->call_us_mean * 3 + took_us) / 4 : took_us;
    c->calls++;
}

uint64_t roundtrim_release_units_fitting(const struct roundtrim_release_cost *c, uint64_t left_us)
{
    if (c->unit_us_x256 == 0)
        return FIRST_CALL_UNITS;
    uint64_t units = left_us * 256 / c->unit_us_x256;
    return units < MIN_UNITS ? MIN_UNITS : units;
}

uint64_t roundtrim_release_predict_us(const struct roundtrim_release_cost *c, uint64_t units)
{
    return c->unit_us_x256 * units / 256;
}
