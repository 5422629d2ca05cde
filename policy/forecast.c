#include "policy/forecast.h"

#include <math.h>
#include <stddef.h>

#include "policy/diag_reason.h"

enum roundtrim_headroom_of roundtrim_headroom(const struct roundtrim_headroom_in *in,
                                              uint64_t *bytes)
{
    enum roundtrim_headroom_of of = RT_HEADROOM_UNKNOWN;
    *bytes = 0;
    if (in->cgroup_limit > 0 && in->cgroup_usage_known) {
        uint64_t reclaimable = in->cgroup_inactive_file < in->cgroup_usage
                                   ? in->cgroup_inactive_file
                                   : in->cgroup_usage;
        uint64_t working = in->cgroup_usage - reclaimable;
        *bytes = working < in->cgroup_limit ? in->cgroup_limit - working : 0;
        of = RT_HEADROOM_CGROUP;
    }
    if (in->available_known && (of == RT_HEADROOM_UNKNOWN || in->available < *bytes)) {
        *bytes = in->available;
        of = RT_HEADROOM_MACHINE;
    }
    return of;
}

static const char *const headroom_names[RT_HEADROOM_COUNT] = {
#define RT_HEADROOM_OF(id, name, meaning) [RT_HEADROOM_##id] = #name,
#include "policy/diag_causes.def"
};

const char *roundtrim_headroom_of_name(enum roundtrim_headroom_of of)
{
    return (unsigned)of < RT_HEADROOM_COUNT ? headroom_names[of] : NULL;
}

void roundtrim_forecast(const struct roundtrim_forecast_in *in, struct roundtrim_forecast *out)
{
    *out = (struct roundtrim_forecast){.before_job_end = -1, .job_rounds = in->job_rounds};
    if (!in->growing || !(in->host_growth >= in->min_growth)) {
        /* A growth in device memory is bounded by the device, not by host memory. */
        out->skipped = in->growing && in->device_growth >= in->min_growth
                           ? roundtrim_diag_reason_name(RT_DIAGR_DEVICE_GROWTH)
                           : roundtrim_diag_reason_name(RT_DIAGR_NO_GROWTH);
        return;
    }
    if (in->headroom_of == RT_HEADROOM_UNKNOWN) {
        out->skipped = roundtrim_diag_reason_name(RT_DIAGR_HEADROOM_UNKNOWN);
        return;
    }
    out->headroom = in->headroom;
    out->headroom_of = in->headroom_of;
    /* The round in which the growth passes the headroom: rounds_to_limit rounds from now. */
    double rounds = ceil((double)in->headroom / in->host_growth);
    out->rounds_to_limit = rounds < 1 ? 1 : rounds > 1e15 ? (uint64_t)1e15 : (uint64_t)rounds;
    out->limit_round = in->round + out->rounds_to_limit;
    if (in->job_rounds > 0)
        out->before_job_end = out->limit_round <= in->job_rounds;
}

const char *roundtrim_diag_reason_name(enum roundtrim_diag_reason r)
{
    static const char *const names[] = {
#define RT_DIAG_REASON(id, name, meaning) [RT_DIAGR_##id] = #name,
#include "policy/diag_causes.def"
    };
    return (unsigned)r < RT_DIAGR_COUNT ? names[r] : "unknown";
}
