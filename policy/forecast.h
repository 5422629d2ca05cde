/* When a growing process reaches its memory limit: the rounds left at its growth rate, and
 * whether that comes before the job's last round. Pure: the running process (its diagnosis
 * record and metrics) and `roundtrim report` (through roundtrim-diagnose) both use it. */
#ifndef ROUNDTRIM_POLICY_FORECAST_H
#define ROUNDTRIM_POLICY_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

/* What the process can still grow by before a limit stops it. */
struct roundtrim_headroom_in {
    uint64_t cgroup_limit;         /* 0: no cgroup limit (or unread) */
    bool cgroup_usage_known;       /* the cgroup's charge was read */
    uint64_t cgroup_usage;         /* the charge, page cache included */
    uint64_t cgroup_inactive_file; /* of it, page cache the kernel reclaims first (memory.stat) */
    bool available_known;
    uint64_t available; /* the machine's MemAvailable */
};

/* The limit a headroom is under (policy/diag_causes.def's RT_HEADROOM_OF rows), or unknown. */
enum roundtrim_headroom_of {
    RT_HEADROOM_UNKNOWN,
#define RT_HEADROOM_OF(id, name, meaning) RT_HEADROOM_##id,
#include "policy/diag_causes.def"
    RT_HEADROOM_COUNT
};

/* The smaller of the cgroup's headroom (its limit less its working set: the charge less the
 * inactive page cache, which reclaim takes before the OOM killer acts) and the machine's
 * available memory, with which one it is. */
enum roundtrim_headroom_of roundtrim_headroom(const struct roundtrim_headroom_in *in,
                                              uint64_t *bytes);

/* The limit's name ("cgroup"), NULL for RT_HEADROOM_UNKNOWN. */
const char *roundtrim_headroom_of_name(enum roundtrim_headroom_of of);

/* The rounds left. growth: host memory bytes per round (the diagnosis's RSS part); round: the
 * latest round; job_rounds: the job's last round, 0 when unknown. */
struct roundtrim_forecast {
    const char *skipped;      /* why none: a diagnosis reason (policy/diag_reason.h) */
    uint64_t rounds_to_limit; /* rounds from `round` until the headroom is used up */
    uint64_t limit_round;     /* the round it is used up in */
    uint64_t headroom;        /* bytes, at `round` */
    enum roundtrim_headroom_of headroom_of;
    uint64_t job_rounds; /* 0: unknown */
    int before_job_end;  /* 1 the limit comes first, 0 the job ends first, -1 unknown */
};

/* A forecast is made for causes of growth the cleanup does not hold (a leak, fragmentation,
 * growth outside the heap) whose host growth is at least `min_growth` bytes a round; growth that
 * is in device memory is not forecast against host memory. */
struct roundtrim_forecast_in {
    bool growing;       /* the verdict is a cause of growth */
    double host_growth; /* bytes per round, RSS */
    double device_growth;
    double min_growth;
    uint64_t round;
    enum roundtrim_headroom_of headroom_of;
    uint64_t headroom;
    uint64_t job_rounds;
};

void roundtrim_forecast(const struct roundtrim_forecast_in *in, struct roundtrim_forecast *out);

#endif
