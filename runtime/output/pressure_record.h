/* The "pressure" record: memory use near its limit ("warn"), or the cleanup it started
 * ("clean", with what that cleanup did). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_PRESSURE_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_PRESSURE_RECORD_H

struct roundtrim_mem_limit;
struct roundtrim_round_record;

/* The record of the limit read lim: a warning, or with the round record of the cleanup the
 * pressure started (cleaned). */
void roundtrim_pressure_record(const struct roundtrim_mem_limit *lim,
                               const struct roundtrim_round_record *cleaned);

#endif
