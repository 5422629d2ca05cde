/* Block addresses whose samples share one home slot in the sample table, for tests of its
 * collisions: the table's hash (runtime/sites/sample_table.c, home(): runtime/core/hash.h over the
 * address less its 4 low bits, for a table of ROUNDTRIM_SAMPLE_TABLE_BITS). Should home() change,
 * check_sample_table's full_probe_window_drops_the_next_sample fails, as these addresses no longer
 * fill one probe window. */
#ifndef ROUNDTRIM_TEST_SAMPLE_HOMES_H
#define ROUNDTRIM_TEST_SAMPLE_HOMES_H

#include <stdint.h>

#include "runtime/core/hash.h"

#ifndef ROUNDTRIM_SAMPLE_TABLE_BITS
#define ROUNDTRIM_SAMPLE_TABLE_BITS 16
#endif

static inline uint32_t sample_home(uintptr_t p)
{
    return roundtrim_hash_slot(p >> 4, ROUNDTRIM_SAMPLE_TABLE_BITS);
}

/* n addresses from `from` up (16-aligned) with the home of the first. */
static inline void sample_homes_same(uintptr_t from, uintptr_t *out, int n)
{
    uint32_t h = sample_home(from);
    int k = 0;
    for (uintptr_t p = from; k < n; p += 16)
        if (sample_home(p) == h)
            out[k++] = p;
}

#endif
