/* A round's cleanup (gc, trim or purge, the device caches) as the policy decides it, and the
 * trim steps taken between round ends. The worker's, under the round lock. */
#ifndef ROUNDTRIM_RUNTIME_ROUNDS_CLEANUP_H
#define ROUNDTRIM_RUNTIME_ROUNDS_CLEANUP_H

#include <stdbool.h>
#include <stdint.h>

struct roundtrim_round_record;

/* Runs the actions due, each when the policy finds it worth it (every one under pressure), and
 * writes what ran, what it gave back and why the others did not into the record. */
void roundtrim_cleanup_run(struct roundtrim_round_record *r, bool pressure);

/* A due cleanup once the process is ending: the record says nothing ran, and why. */
void roundtrim_cleanup_skipped_at_exit(struct roundtrim_round_record *r);

/* The trim steps since the previous record go into this one (their CPU, what they returned). */
void roundtrim_cleanup_steps_into_record(struct roundtrim_round_record *r);

/* One trim step between round ends, when the policy finds one due. */
void roundtrim_cleanup_trim_step_maybe(void);

/* The round's length, which earns the cleanup its CPU budget (the adaptive policy). */
void roundtrim_cleanup_round_time(uint64_t round_us);

/* The round's memory as read: the largest arena's share, which the trim steps plan by. */
void roundtrim_cleanup_memory_read(const struct roundtrim_round_record *r);

/* Cleanup rounds that ran at least one action. */
uint64_t roundtrim_cleanup_count(void);

void roundtrim_cleanup_fork_child(void);

#endif
