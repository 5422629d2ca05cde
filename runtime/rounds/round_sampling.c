#include "runtime/rounds/round.h"

#include <string.h>

#include "policy/pressure.h"
#include "policy/round_record.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/output/pressure_record.h"
#include "runtime/rounds/cleanup.h"
#include "runtime/rounds/round_sync.h"
#include "runtime/rounds/rss_peak.h"

static uint64_t last_round_us, last_pressure_us;
static struct roundtrim_pressure pressure;

/* Timer rounds and pressure samples: when a variable asked for them, else once the process has
 * seen a boundary. A worker started with the interpreter stays asleep in a Python process that
 * never ends a round (pip, a launcher): no sample, no record. */
static bool periodic_wanted(const struct roundtrim_config *cfg)
{
    if (cfg->interval_s == 0 && cfg->pressure_warn == 0 && cfg->pressure_clean == 0)
        return false;
    return roundtrim_config_wants_sampling(cfg) || roundtrim_boundaries_seen() > 0;
}

/* Milliseconds until the next timer round is due (1 at least), or 0 without timer rounds. */
static uint64_t timer_round_in_ms(const struct roundtrim_config *cfg)
{
    uint64_t last = __atomic_load_n(&last_round_us, __ATOMIC_RELAXED);
    if (cfg->interval_s == 0 || last == 0)
        return 0;
    uint64_t due = last + cfg->interval_s * 1000000u, now = roundtrim_now_us();
    return due > now + 1000 ? (due - now + 999) / 1000 : 1;
}

uint64_t roundtrim_round_sample_period_ms(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    uint64_t ms = 0;
    if (periodic_wanted(cfg)) {
        ms = cfg->sample_ms;
        /* The timer's round on time, not at the sample after it. */
        uint64_t timer_ms = timer_round_in_ms(cfg);
        if (timer_ms && timer_ms < ms)
            ms = timer_ms;
    }
    if (!cfg->peak_reset && roundtrim_rss_peak_sampling() &&
        (ms == 0 || ms > ROUNDTRIM_PEAK_SAMPLE_MS))
        ms = ROUNDTRIM_PEAK_SAMPLE_MS;
    return ms;
}

static void pressure_cleanup(const struct roundtrim_mem_limit *lim)
{
    struct roundtrim_round_record r;
    memset(&r, 0, sizeof r);
    roundtrim_round_lock();
    if (roundtrim_round_exiting()) {
        roundtrim_round_unlock();
        return;
    }
    r.rss_before = roundtrim_rss_bytes();
    roundtrim_cleanup_run(&r, true);
    r.rss_after = roundtrim_rss_bytes();
    roundtrim_pressure_record(lim, &r);
    roundtrim_round_unlock();
}

void roundtrim_round_sample(void)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    if (roundtrim_round_exiting())
        return;
    if (roundtrim_rss_peak_sampling())
        roundtrim_rss_peak_sample();
    if (roundtrim_boundaries_seen() > 0 && roundtrim_round_trylock()) {
        if (!roundtrim_round_exiting())
            roundtrim_cleanup_trim_step_maybe();
        roundtrim_round_unlock();
    }
    if (!periodic_wanted(cfg))
        return;
    uint64_t now = roundtrim_now_us();
    uint64_t last = __atomic_load_n(&last_round_us, __ATOMIC_RELAXED);
    if (last == 0) /* not started with the library (an embedder's late load) */
        __atomic_store_n(&last_round_us, last = now, __ATOMIC_RELAXED);
    if (cfg->interval_s > 0 && now - last >= cfg->interval_s * 1000000u) {
        __atomic_store_n(&last_round_us, now, __ATOMIC_RELAXED);
        roundtrim_boundary(ROUNDTRIM_SRC_TIMER);
        roundtrim_round_run_pending();
    }
    if (cfg->pressure_warn == 0 && cfg->pressure_clean == 0)
        return;
    if (last_pressure_us != 0 && now - last_pressure_us < cfg->sample_ms * 1000u)
        return;
    last_pressure_us = now;
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(roundtrim_cgroup_dir_in_use(cfg->cgroup_dir), &lim);
    unsigned act = roundtrim_pressure_update(&pressure, cfg, lim.used, lim.limit, now / 1000);
    if (act & RT_PRESSURE_WARN)
        roundtrim_pressure_record(&lim, NULL);
    if (act & RT_PRESSURE_CLEAN)
        pressure_cleanup(&lim);
}

/* Also at the library's start: the first timer round is one interval after it. */
void roundtrim_round_sampling_round_done(void)
{
    __atomic_store_n(&last_round_us, roundtrim_now_us(), __ATOMIC_RELAXED);
}

void roundtrim_round_sampling_fork_child(void)
{
    memset(&pressure, 0, sizeof pressure);
    __atomic_store_n(&last_round_us, roundtrim_now_us(), __ATOMIC_RELAXED);
    last_pressure_us = 0;
}
