/* What one round measured and did, and its JSON form (one line of the round log). */
#ifndef ROUNDTRIM_POLICY_ROUND_RECORD_H
#define ROUNDTRIM_POLICY_ROUND_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/cleanup_actions.h"
#include "policy/cuda_round.h"
#include "policy/forecast.h"
#include "policy/json_writer.h"
#include "policy/mem_parts.h"
#include "policy/skip_reason.h"
#include "policy/traffic.h"

struct roundtrim_round_record {
    int pid;
    uint64_t round;
    uint64_t merged_rounds; /* earlier boundaries this record also covers (queue was full) */
    double ts;              /* seconds since the epoch */
    const char *source;
    const char *hook; /* "module:qualname" of the Python hook that ended the round, or NULL */
    const char *allocator;
    struct roundtrim_traffic traffic;
    enum roundtrim_skip
        counts_skipped;            /* why traffic was not measured (its counts are then null) */
    const char *signal_rounds_off; /* said once: why the round signal stopped marking rounds */
    bool heap_live_known;
    uint64_t heap_live;
    enum roundtrim_skip heap_live_skipped; /* why heap_live was not read, or NULL */
    uint64_t rss_before, rss_after, rss_peak;
    bool cgroup_known;
    uint64_t cgroup_usage, cgroup_limit;
    /* The limit memory pressure is measured against: the cgroup's, else MemTotal (0: unknown).
     * For the metrics file; not in the round's JSON (cgroup_limit is). */
    uint64_t mem_limit;
    bool mem_limit_from_cgroup;
    /* What the process can still grow by before a limit stops it (policy/forecast.h). */
    uint64_t mem_headroom;
    enum roundtrim_headroom_of mem_headroom_of;
    unsigned actions; /* enum roundtrim_action bits, in the order they ran */
    uint64_t cleanup_us, trim_us;
    uint64_t round_us;       /* wall time since the previous boundary (the first: since start) */
    uint64_t cleanup_cpu_us; /* CPU time the cleanup took, its Python jobs included */
    uint64_t trim_pause_predicted_us; /* with trim_skipped pause_limit: the pause foreseen */
    /* Trims taken in steps during the round (the pause limit): how many, what they returned,
     * their time; their CPU is in cleanup_cpu_us. */
    uint64_t trim_steps, trim_steps_released_bytes, trim_steps_us;
    /* A trim done in holds of the arenas' locks, each under the pause limit (the round end's and
     * the steps'): how many, the longest, and how many a thread of the program waited for. */
    uint64_t trim_holds, trim_hold_max_us, trim_holds_waited;
    /* Their release system calls (process_madvise, many ranges each, or madvise, one each) and
     * the bytes of free pages those covered. */
    uint64_t trim_calls, trim_call_bytes;
    uint64_t trim_arenas_left; /* arenas the holds left alone (unlike the layout known) */
    bool trim_budget_cut;      /* the trim in holds stopped where the CPU budget ran out */
    /* Cleanup rounds in a row whose trim the pause limit held back (where no trim in holds was
     * possible), this one included: the diagnosis may say cleanup is held back. */
    uint64_t trim_held_back_rounds;
    bool trim_retry; /* held back too long: ran anyway, to measure its rate again */
    enum roundtrim_skip cleanup_skipped; /* why a due cleanup did not run at all (exiting) */
    bool gc_ran;
    uint64_t gc_collected, gc_us;
    enum roundtrim_skip gc_skipped;   /* why a due gc did not run (gil_timeout, ...) */
    enum roundtrim_skip trim_skipped; /* why a due trim or purge did not run (program_trim) */
    uint64_t torch_empty_cache_us;
    enum roundtrim_skip torch_empty_cache_skipped; /* why a due empty_cache did not run */
    uint64_t cuda_pool_trim_bytes;
    enum roundtrim_skip cuda_pool_trim_skipped;        /* why a due pool trim did not run */
    uint64_t cupy_free_blocks_us, cupy_released_bytes; /* device bytes CuPy's release returned */
    /* The holder search since the previous record: the GIL its steps held, and how many. */
    uint64_t holders_gil_us, holders_steps;
    enum roundtrim_skip
        cupy_free_blocks_skipped; /* why a due release of CuPy's pools did not run */
    /* What each action gave back, measured around it alone: heap and pymalloc bytes gc freed,
     * resident bytes the trim or purge returned, device bytes torch's cache release returned. */
    uint64_t gc_freed_bytes, trim_released_bytes, torch_released_bytes;
    bool memory_read; /* memory was read for this round (false: a pressure cleanup's record) */
    struct roundtrim_memory_parts memory;
    struct roundtrim_cuda_round cuda;
};

/* The four malloc-family counts, each null when skipped is set (the record's counts_skipped
 * says why). */
void roundtrim_json_traffic(struct roundtrim_json *j, const struct roundtrim_traffic *t,
                            enum roundtrim_skip skipped);

/* Formats a round record as one JSON line. Returns its length, 0 if buf was too small. */
size_t roundtrim_round_record_format(const struct roundtrim_round_record *r, char *buf, size_t cap);

#endif
