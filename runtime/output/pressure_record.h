/* The "pressure" record: memory use near its limit ("warn"), or the cleanup it started
 * ("clean", with what that cleanup did). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_PRESSURE_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_PRESSURE_RECORD_H

struct roundtrim_mem_limit;
struct roundtrim_round_record;

void roundtrim_pressure_record(const char *level, const struct roundtrim_mem_limit *lim,
                               const struct roundtrim_round_record *cleaned);

#endif
