/* What giving pages back costs on this host, learnt from this process's own release calls.
 *
 * The cost is per system call and per range, not per byte: one madvise(MADV_DONTNEED) of one
 * page takes about 1 us on one host and 60-100 us on another of the same kind (page tables
 * virtualized in software), and moves with the host's load. A call's time is modelled as a number
 * of units, one per range it carries and one more per 16 pages (populated pages cost to unmap),
 * times the host's microseconds per unit, a running mean of every call so far: one slow call
 * makes the next batches smaller, never stops them.
 *
 * A trim in holds sizes each call so that it ends within what is left of the hold's budget.
 * Pure: the caller makes the calls and reads the clock. */
#ifndef ROUNDTRIM_POLICY_RELEASE_COST_H
#define ROUNDTRIM_POLICY_RELEASE_COST_H

#include <stdint.h>

/* The most ranges one process_madvise takes (IOV_MAX). */
#define ROUNDTRIM_RELEASE_BATCH_MAX 1024
/* Pages per extra unit of a range. */
#define ROUNDTRIM_RELEASE_PAGES_PER_UNIT 16

struct roundtrim_release_cost {
    uint64_t unit_us_x256; /* microseconds per unit, times 256; 0 before a first call */
    uint64_t calls;        /* calls measured */
    uint64_t call_us_mean; /* a running mean of one call's time */
};

/* The units of one range of pages pages. */
uint64_t roundtrim_release_units(uint64_t pages);

/* A call that carried units took took_us: learnt. */
void roundtrim_release_cost_learn(struct roundtrim_release_cost *c, uint64_t units,
                                  uint64_t took_us);

/* The units the next call may carry so that it ends within left_us (at least one range's worth,
 * so every call makes progress; a first call, with nothing learnt, is kept small to measure). */
uint64_t roundtrim_release_units_fitting(const struct roundtrim_release_cost *c, uint64_t left_us);

/* The time units are foreseen to take, microseconds (0 before a first call). */
uint64_t roundtrim_release_predict_us(const struct roundtrim_release_cost *c, uint64_t units);

#endif
