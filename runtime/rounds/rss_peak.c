#include "runtime/rounds/rss_peak.h"

#include "runtime/core/proc_mem.h"

static uint64_t sampled_max; /* highest sample since the last boundary; CAS-raised */
static uint64_t hwm_before;  /* VmHWM at the last boundary; 0 before the first */
static bool sampling;

void roundtrim_rss_peak_sample(void)
{
    uint64_t rss = roundtrim_rss_bytes();
    uint64_t cur = __atomic_load_n(&sampled_max, __ATOMIC_RELAXED);
    while (rss > cur && !__atomic_compare_exchange_n(&sampled_max, &cur, rss, true,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

bool roundtrim_rss_peak_sampling(void)
{
    return __atomic_load_n(&sampling, __ATOMIC_RELAXED);
}

uint64_t roundtrim_rss_peak_round(uint64_t rss_before, bool reset_kernel, bool close)
{
    uint64_t hwm = roundtrim_rss_peak_bytes();
    uint64_t peak = rss_before;
    if (reset_kernel) {
        /* The kernel's mark covers exactly this round (reset at the last boundary). */
        if (hwm > peak)
            peak = hwm;
    } else {
        uint64_t s = __atomic_load_n(&sampled_max, __ATOMIC_RELAXED);
        if (s > peak)
            peak = s;
        /* A new lifetime high since the last boundary was reached in this round. */
        if (hwm > hwm_before && hwm > peak)
            peak = hwm;
    }
    if (close)
        hwm_before = hwm;
    return peak;
}

void roundtrim_rss_peak_next(uint64_t rss_after, bool reset_kernel)
{
    __atomic_store_n(&sampled_max, rss_after, __ATOMIC_RELAXED);
    if (reset_kernel && roundtrim_rss_peak_reset())
        hwm_before = 0;
    __atomic_store_n(&sampling, true, __ATOMIC_RELAXED);
}

void roundtrim_rss_peak_fork_child(void)
{
    /* The child's VmHWM starts from its own RSS at fork: its first round is covered by it. */
    __atomic_store_n(&sampled_max, 0, __ATOMIC_RELAXED);
    hwm_before = 0;
    __atomic_store_n(&sampling, false, __ATOMIC_RELAXED);
}
