/* Why a process's memory grows, from its last rounds' breakdown and what each cleanup action
 * gave back: the dominant cause, the share of each, and advice a user can act on. Pure: the
 * running process and `roundtrim report` both use it. */
#ifndef ROUNDTRIM_POLICY_DIAGNOSIS_H
#define ROUNDTRIM_POLICY_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/round_record.h"

enum roundtrim_cause {
    RT_CAUSE_NONE,
    RT_CAUSE_LEAK,          /* live memory grows: references kept from round to round */
    RT_CAUSE_FRAGMENTATION, /* freed heap kept resident; a trim or purge returns it */
    RT_CAUSE_GARBAGE,       /* cyclic garbage that gc frees */
    RT_CAUSE_CUDA_CACHE,    /* device memory cached by PyTorch or the driver's pools */
    RT_CAUSE_OUTSIDE_HEAP,  /* anonymous, file or shared memory outside the allocators */
    RT_CAUSE_COUNT
};

const char *roundtrim_cause_name(enum roundtrim_cause c);

/* One round, as its record says (the memory measured before that round's cleanup). */
struct roundtrim_diag_sample {
    uint64_t round;
    uint64_t rss;
    bool known[RT_PART_COUNT];
    uint64_t part[RT_PART_COUNT];
    bool gc_ran;
    bool program_gc; /* the program ran a full collection of its own since the last cleanup */
    uint64_t gc_collected, gc_freed;
    bool trim_ran; /* the trim or purge ran (a policy may leave it out of a round) */
    uint64_t trim_released;
    uint64_t device_released; /* torch's cache release and the pools' trim */
};

/* What the advice may refer to. */
struct roundtrim_diag_context {
    uint64_t cleanup_every; /* rounds between cleanups; 0: cleanup off */
    bool cuda_empty_cache;  /* the CUDA cache is released at cleanup */
    bool sites;             /* allocation sites are sampled */
    bool python;            /* the process runs Python */
    const char *allocator;  /* "glibc", "jemalloc", or another's name */
};

#define ROUNDTRIM_DIAG_MIN_ROUNDS 3

struct roundtrim_diagnosis {
    const char *skipped; /* why no diagnosis: "too_few_rounds" (then the rest is empty) */
    enum roundtrim_cause cause;
    bool mixed;             /* no cause has most of the growth (or of what cleanup recovers) */
    const char *decided_by; /* "growth", "cleanup_yield" (flat: what cleanup takes back each
                               round), "level" (flat, mostly cached or freed memory), "flat" */
    int rounds;             /* samples used */
    uint64_t first_round, last_round;
    double growth_per_round; /* bytes/round: RSS and device memory together */
    double rss_mean;
    bool slope_known[RT_PART_COUNT];
    double slope[RT_PART_COUNT];  /* bytes/round, each part */
    double share[RT_CAUSE_COUNT]; /* 0..1, of what decided */
    double gc_freed_per_round, trim_released_per_round, device_released_per_round;
    double recovered_per_round; /* the three together */
    double gc_collected_per_round;
    double heap_free_share;  /* median share of RSS the free-but-resident heap is */
    double heap_free_median; /* bytes */
    bool collected;          /* a full collection (roundtrim's or the program's) ran in the window:
                                without one, growing live Python memory may be garbage not yet collected */
    char advice[640];
};

/* Diagnoses samples[0..n) (oldest first; rounds whose memory was not measured left out by the
 * caller). */
void roundtrim_diagnose(const struct roundtrim_diag_sample *samples, size_t n,
                        const struct roundtrim_diag_context *ctx, struct roundtrim_diagnosis *out);

/* Appends the diagnosis's fields to a JSON object being written ("cause", "mixed", "shares",
 * "growth_bytes_per_round", "slopes", "recovered_bytes_per_round", "advice", ...). */
void roundtrim_diagnosis_json(struct roundtrim_json *j, const struct roundtrim_diagnosis *d);

#endif
