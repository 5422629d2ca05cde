/* Malloc-family traffic counts: what the per-thread counters sum to and what a round record
 * holds, kept apart from the record so that the allocation path includes only this. */
#ifndef ROUNDTRIM_POLICY_TRAFFIC_H
#define ROUNDTRIM_POLICY_TRAFFIC_H

#include <stdint.h>

/* Malloc-family traffic; a round's record holds the difference of two cumulative readings. */
struct roundtrim_traffic {
    uint64_t
        malloc_calls; /* every call that returned a block: malloc, calloc, realloc, memalign... */
    uint64_t free_calls;   /* every call that released a block: free, realloc's old block... */
    uint64_t malloc_bytes; /* usable size of the blocks handed out */
    uint64_t free_bytes;   /* usable size of the blocks released */
    /* glibc: net usable bytes of the large blocks that are mappings of their own (not in the
     * record; the memory breakdown's arena figures are taken from it) */
    uint64_t mmapped_net;
};

#endif
