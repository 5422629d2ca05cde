#include "runtime/rounds/round_measure.h"

#include <string.h>
#include <unistd.h>

#include "policy/round_record.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/clock.h"
#include "runtime/core/proc_mem.h"
#include "runtime/core/settings.h"
#include "runtime/cuda/track.h"
#include "runtime/rounds/memory_parts.h"
#include "runtime/rounds/round_sync.h"
#include "runtime/rounds/rss_peak.h"

static struct roundtrim_boundary_snap last; /* the previous boundary's counters */

/* The part of now above the baseline, which moves up to now: out-of-order snapshots of two
 * boundaries racing on two threads never give a negative figure, and nothing is counted twice. */
static uint64_t take_above(uint64_t *base, uint64_t now)
{
    uint64_t d = now > *base ? now - *base : 0;
    if (now > *base)
        *base = now;
    return d;
}

static void traffic_delta(struct roundtrim_traffic *d, const struct roundtrim_traffic *now)
{
    d->malloc_calls = take_above(&last.traffic.malloc_calls, now->malloc_calls);
    d->free_calls = take_above(&last.traffic.free_calls, now->free_calls);
    d->malloc_bytes = take_above(&last.traffic.malloc_bytes, now->malloc_bytes);
    d->free_bytes = take_above(&last.traffic.free_bytes, now->free_bytes);
}

void roundtrim_round_measure(struct roundtrim_round_record *r,
                             const struct roundtrim_boundary_snap *s)
{
    traffic_delta(&r->traffic, &s->traffic);
    r->pid = (int)getpid();
    r->ts = s->wall_s;
    r->allocator = roundtrim_allocator_name();
    r->counts_skipped = roundtrim_allocator_counts_skipped();
    r->rss_before = roundtrim_rss_bytes();
    r->rss_peak = roundtrim_rss_peak_round(r->rss_before, roundtrim_config()->peak_reset, true);
    if (!r->counts_skipped) {
        r->heap_live_known = true;
        r->heap_live = roundtrim_counters_live(&s->traffic);
    } else {
        r->heap_live_skipped = r->counts_skipped;
    }
    struct roundtrim_mem_limit lim;
    roundtrim_mem_limit_read(roundtrim_cgroup_dir_in_use(roundtrim_config()->cgroup_dir), &lim);
    r->mem_limit = lim.limit;
    r->mem_limit_from_cgroup = lim.from_cgroup;
    r->mem_headroom = lim.headroom;
    r->mem_headroom_of = lim.headroom_of;
    if (lim.cgroup_usage_known) {
        r->cgroup_known = true;
        r->cgroup_usage = lim.cgroup_usage;
        r->cgroup_limit = lim.cgroup_limit;
    }
    roundtrim_cuda_round_fill(&r->cuda, &s->cuda, &last.cuda, !roundtrim_round_inline());
    if (s->cuda.seen)
        last.cuda = s->cuda;
    /* Read once the program has begun to exit, the memory would be the exit's, not the
     * round's: the interpreter's finalization frees most of it (and begins before exit()). */
    if (roundtrim_round_process_ending())
        r->memory.skipped = RT_SKIP_exiting;
    else {
        uint64_t t0 = roundtrim_now_us();
        roundtrim_memory_parts_read(&r->memory, &s->traffic, &r->cuda);
        r->memory.read_us = roundtrim_now_us() - t0;
        if (roundtrim_round_process_ending()) { /* it began while the parts were read */
            memset(&r->memory, 0, sizeof r->memory);
            r->memory.skipped = RT_SKIP_exiting;
            return;
        }
        r->memory_read = true;
    }
}

void roundtrim_round_measure_fork_child(void)
{
    memset(&last, 0, sizeof last);
}
