/* Boundary snapshots whose every field is drawn from one number, the stamp: a copy that mixes
 * two snapshots (torn) is told from a whole one, and the stamp says which boundary it is. */
#ifndef ROUNDTRIM_TEST_SNAP_STAMP_H
#define ROUNDTRIM_TEST_SNAP_STAMP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/boundary/snapshot.h"

static const char *const snap_stamp_labels[] = {"one", "two", "three"};

static inline void snap_stamp_class(struct roundtrim_cuda_class_counts *c, uint64_t n)
{
    *c = (struct roundtrim_cuda_class_counts){n, n + 1, n + 2, n + 3, n + 4, n + 5};
}

static inline void snap_stamp(struct roundtrim_boundary_snap *s, uint64_t n)
{
    memset(s, 0, sizeof *s);
    s->src = (enum roundtrim_source)(n % ROUNDTRIM_SRC_COUNT);
    s->wall_s = (double)(n & ((1ull << 52) - 1));
    s->label = snap_stamp_labels[n % 3];
    s->traffic = (struct roundtrim_traffic){n, n ^ 0x5555, n * 3, ~n, n};
    s->cuda.seen = n & 1;
    snap_stamp_class(&s->cuda.device, n * 7);
    snap_stamp_class(&s->cuda.host, ~n);
}

static inline uint64_t snap_stamp_of(const struct roundtrim_boundary_snap *s)
{
    return s->traffic.malloc_calls;
}

static inline bool snap_class_eq(const struct roundtrim_cuda_class_counts *a,
                                 const struct roundtrim_cuda_class_counts *b)
{
    return a->alloc_calls == b->alloc_calls && a->alloc_bytes == b->alloc_bytes &&
           a->free_calls == b->free_calls && a->free_bytes == b->free_bytes &&
           a->live_bytes == b->live_bytes && a->peak_bytes == b->peak_bytes;
}

/* Whether every field (dropped_before aside: the queue sets it) agrees with the stamp. */
static inline bool snap_stamped(const struct roundtrim_boundary_snap *s)
{
    struct roundtrim_boundary_snap w;
    snap_stamp(&w, snap_stamp_of(s));
    return s->src == w.src && s->wall_s == w.wall_s && s->label == w.label &&
           s->traffic.free_calls == w.traffic.free_calls &&
           s->traffic.malloc_bytes == w.traffic.malloc_bytes &&
           s->traffic.free_bytes == w.traffic.free_bytes && s->cuda.seen == w.cuda.seen &&
           snap_class_eq(&s->cuda.device, &w.cuda.device) &&
           snap_class_eq(&s->cuda.host, &w.cuda.host);
}

#endif
