/* Measurements from two machines of one kind (2 cores, glibc 2.36), for the policy suites: the
 * 4-thread fragmenting workload leaves 445 MiB of freed heap a round, the largest arena a
 * quarter of it. A whole malloc_trim(0) took 85 ms on the fast one (0.19 ms per MiB) and 712 ms
 * on the slow one (1.6 ms per MiB); with two CPU-bound processes beside it, about three times
 * that. */
#ifndef ROUNDTRIM_TEST_TRIM_MACHINES_H
#define ROUNDTRIM_TEST_TRIM_MACHINES_H

#include <stdint.h>

#define FRAG_FREE_MIB    445
#define FRAG_ARENA_SHARE 250
static const uint64_t trim_us_fast = 85000, trim_us_slow = 712000;

#endif
