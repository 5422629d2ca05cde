/* Why a process's memory grows, from its rounds' breakdown and what each cleanup action gave
 * back: the cause of growth (or none), what cleanup holds flat, levels that waste memory, and
 * advice a user can act on. Pure: the running process and `roundtrim report` (through the
 * roundtrim-diagnose command) both use it. */
#ifndef ROUNDTRIM_POLICY_DIAGNOSIS_H
#define ROUNDTRIM_POLICY_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/forecast.h"
#include "policy/mem_parts.h"
#include "policy/skip_reason.h"

struct roundtrim_json;

/* The causes of growth (policy/diag_causes.def). */
enum roundtrim_cause {
#define RT_CAUSE(id, name, verdict, grows, words) RT_CAUSE_##id,
#include "policy/diag_causes.def"
    RT_CAUSE_COUNT
};

const char *roundtrim_cause_name(enum roundtrim_cause c);

/* The cleanup actions whose yield the diagnosis weighs (policy/diag_input.def's RT_DIAG_ACTION
 * rows): indexes of its per-action figures. */
enum roundtrim_diag_action {
#define RT_DIAG_ACTION(id, name, given) RT_DIAG_ACTION_##id,
#include "policy/diag_input.def"
    RT_DIAG_ACTION_COUNT
};

/* The name of an action ("gc"), the key of the diagnosis record's recovered and held objects. */
const char *roundtrim_diag_action_name(enum roundtrim_diag_action a);

/* One round, as its record says (the memory measured before that round's cleanup): the members
 * policy/diag_input.def fills. */
struct roundtrim_diag_sample {
    uint64_t round;
    uint64_t rss;
    bool known[RT_PART_COUNT];
    uint64_t part[RT_PART_COUNT];
    uint64_t heap_uncounted; /* of heap_live, blocks the counters missed (glibc's headers) */
    /* How far the parts exceed rss: live blocks whose pages were never touched (a buffer
     * allocated at its full capacity and filled round by round). */
    uint64_t over_rss;
    bool gc_ran;
    bool program_gc; /* the program ran a full collection of its own since the last cleanup */
    uint64_t gc_collected, gc_freed;
    enum roundtrim_skip gc_skipped; /* the record's reason */
    bool trim_ran; /* the trim or purge ran (a policy may leave it out of a round) */
    uint64_t trim_released;
    enum roundtrim_skip trim_skipped;
    uint64_t device_released; /* torch's cache release and the pools' trim */
    /* What the process could still grow by at this round (the record's mem_headroom). */
    enum roundtrim_headroom_of headroom_of;
    uint64_t headroom;
};

/* What the advice may refer to: the settings in force and what the start record says. */
struct roundtrim_diag_context {
    uint64_t cleanup_every;    /* rounds between cleanups; 0: cleanup off */
    bool cuda_empty_cache;     /* the CUDA cache is released at cleanup */
    bool sites;                /* allocation sites are sampled (asked for and working) */
    const char *sites_skipped; /* asked for, but the sampler could not start: why */
    bool python;               /* the process runs Python */
    const char *allocator;     /* "glibc", "jemalloc", or another's name */
    uint64_t window;           /* rounds the verdict's figures cover (ROUNDTRIM_DIAG_ROUNDS) */
    uint64_t job_rounds;       /* the job's last round (ROUNDTRIM_JOB_ROUNDS); 0 unknown */
};

#define ROUNDTRIM_DIAG_MIN_ROUNDS 3
/* The most bytes a diagnosis record takes (the library's and roundtrim-diagnose's alike). */
#define ROUNDTRIM_DIAGNOSIS_RECORD_MAX 6144
/* ROUNDTRIM_DIAG_ROUNDS's default: the rounds a verdict's figures cover. */
#define ROUNDTRIM_DIAG_DEFAULT_ROUNDS 10
/* The latest rounds growth is judged over (and ROUNDTRIM_DIAG_ROUNDS's largest value). */
#define ROUNDTRIM_DIAG_HISTORY 64
/* Persistence: a part grows when each of SUB_ROUNDS successive rounds' windows shows it rising
 * and staying up, in PERSIST windows in a row ending with the latest. */
#define ROUNDTRIM_DIAG_SUB_ROUNDS 6
#define ROUNDTRIM_DIAG_PERSIST    4
/* The fewest measured rounds a cause of growth needs. */
#define ROUNDTRIM_DIAG_DECIDE_ROUNDS (ROUNDTRIM_DIAG_SUB_ROUNDS + ROUNDTRIM_DIAG_PERSIST - 1)
/* The smallest steady growth of the exact live counters called a leak, bytes per round. */
#define ROUNDTRIM_DIAG_LEAK_MIN (8 << 10)
/* A leak slower than this must persist over PERSIST_SMALL windows in a row (17 rounds at windows
 * of 6): a framework's own state grows by some 100 KiB a round over its first rounds (NVFlare's
 * in-process client: +130 KiB a round of Python objects and heap over rounds 2-13) and may stop
 * there; a leak a page never needs calling within ten rounds. */
#define ROUNDTRIM_DIAG_SMALL_LEAK    (512 << 10)
#define ROUNDTRIM_DIAG_PERSIST_SMALL 12
#define ROUNDTRIM_DIAG_DECIDE_SMALL_ROUNDS                                                         \
    (ROUNDTRIM_DIAG_SUB_ROUNDS + ROUNDTRIM_DIAG_PERSIST_SMALL - 1)

/* Levels and patterns found beside the cause (policy/diag_causes.def): bits of
 * roundtrim_diagnosis.findings. */
enum roundtrim_finding_bit {
#define RT_FINDING(id, name, meaning) RT_FIND_BIT_##id,
#include "policy/diag_causes.def"
    RT_FIND_COUNT_BITS
};
enum roundtrim_finding {
#define RT_FINDING(id, name, meaning) RT_FIND_##id = 1u << RT_FIND_BIT_##id,
#include "policy/diag_causes.def"
};

const char *roundtrim_finding_name(unsigned bit_index);

/* Which sentence on allocation sites the advice holds (policy/diag_causes.def's RT_SITES_SAID
 * rows); none: the advice says nothing of sites. */
enum roundtrim_sites_said {
    RT_SITES_SAID_NONE,
#define RT_SITES_SAID(id, name, meaning) RT_SITES_SAID_##id,
#include "policy/diag_causes.def"
    RT_SITES_SAID_COUNT
};
struct roundtrim_sites_advice {
    enum roundtrim_sites_said said;
    size_t at, length; /* characters of the advice before it, and its own */
};

struct roundtrim_diagnosis {
    const char *skipped; /* why no diagnosis: a diagnosis reason (then the rest is empty) */
    enum roundtrim_cause cause;
    bool mixed;             /* no cause has most of the growth */
    const char *decided_by; /* "growth" (persistent), "flat", "not_yet" (unsure: too short),
                               "noisy" (unsure: within the swing), "uncollected" (unsure: no gc),
                               "steps" (rises that stay, flat between: leak from 3, else unsure) */
    int rounds;             /* samples the figures cover (the verdict's window) */
    uint64_t first_round, last_round;
    int persisted;          /* successive windows the growing part grew in, ending at the last */
    uint64_t growing_since; /* the first round that grew, in the first of those windows; 0: none */
    uint64_t rate_first_round; /* the advice's growth figure covers rounds from this one */
    uint64_t decide_round;     /* unsure: the round by which it can tell, if growth goes on */
    int steps;                 /* decided_by "steps": how many, the latest in round last_step */
    uint64_t last_step;
    double growth_per_round; /* bytes/round: RSS and device memory together */
    /* bytes/round: the growth figure within this of 0 does not stand out of the rounds' scatter
     * (a fit carried by one low round is not growth) */
    double growth_noise_per_round;
    double rss_mean;
    bool slope_known[RT_PART_COUNT];
    double slope[RT_PART_COUNT];  /* bytes/round, each part */
    double share[RT_CAUSE_COUNT]; /* 0..1, of the growth */
    double gc_freed_per_round, trim_released_per_round, device_released_per_round;
    double recovered_per_round; /* the three together */
    double gc_collected_per_round;
    /* What cleanup holds flat, bytes per round: an action's mean over the window where it gave
     * back 1 MiB or more in most of the rounds it was due in (held_rounds: gc, trim, device). */
    double held_gc, held_trim, held_device;
    int held_rounds[RT_DIAG_ACTION_COUNT];
    double heap_free_share;     /* median share of RSS the free-but-resident heap is */
    double heap_free_median;    /* bytes */
    double uncounted_per_round; /* heap growth no trim returns: live blocks allocated around
                                   roundtrim's counters (a direct call of glibc's malloc) */
    double plateau_rise;        /* RT_FIND_PLATEAU: how much the live part rose before it stopped */
    double swing;               /* RT_FIND_SWINGS: the live part's range over the window */
    int held_back_rounds;       /* RT_FIND_HELD_BACK: rounds whose trim or gc was held back */
    enum roundtrim_skip held_back_why; /* pause_limit or budget */
    unsigned findings;                 /* enum roundtrim_finding bits */
    bool collected; /* a full collection (roundtrim's or the interpreter's) ran in the window:
                       without one, growing live Python memory may be garbage not yet collected */
    /* When the growth reaches the memory limit, at the latest round's headroom. */
    struct roundtrim_forecast forecast;
    char advice[1536];
    /* The advice's sentence on allocation sites (a leak's), and where it stands in the advice
     * (in characters): what the report switches on, never the sentence's words. */
    struct roundtrim_sites_advice sites_advice;
};

/* Diagnoses samples[0..n) (oldest first; rounds whose memory was not measured left out by the
 * caller): the verdict's figures over the last ctx->window of them, persistence over all. */
void roundtrim_diagnose(const struct roundtrim_diag_sample *samples, size_t n,
                        const struct roundtrim_diag_context *ctx, struct roundtrim_diagnosis *out);

/* Whether the verdict asks for allocation sites when they were not asked for: a leak, or an
 * unsure verdict on growth that persisted as long as a leak's must (a slow leak, which must
 * persist longer; growth no collection has judged yet) in which the heap's or pymalloc's live
 * bytes rise by at least ROUNDTRIM_DIAG_LEAK_MIN a round. */
bool roundtrim_diagnosis_wants_sites(const struct roundtrim_diagnosis *d);

/* Appends the diagnosis's fields to a JSON object being written ("cause", "mixed", "shares",
 * "growth_bytes_per_round", "slopes", "recovered_bytes_per_round", "held", "findings",
 * "persisted_windows", "forecast" or "forecast_skipped", "advice", ...). */
void roundtrim_diagnosis_json(struct roundtrim_json *j, const struct roundtrim_diagnosis *d);

#endif
