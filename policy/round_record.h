/* What one round measured and did, and its JSON form (one line of the round log). */
#ifndef ROUNDTRIM_POLICY_ROUND_RECORD_H
#define ROUNDTRIM_POLICY_ROUND_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/bounded_text.h"
#include "policy/traffic.h"

/* Device memory as seen by the driver hooks. present is false when the driver was never seen. */
struct roundtrim_cuda_round {
    bool present;
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes;
    uint64_t live_bytes, peak_bytes;
    bool have_mem_info;
    uint64_t free_mem, total_mem;
    const char *mem_info_skipped; /* why free/total are missing: "no_context", ... */
    /* Pinned host memory allocated through the driver: in RSS already, so counted apart. */
    uint64_t host_alloc_calls, host_alloc_bytes, host_free_calls, host_free_bytes;
    uint64_t host_live_bytes;
};

/* Where the process's memory is when the round ends (before its cleanup): parts of the resident
 * set that add up to it, each from a source of its own, and the device memory. A part that
 * could not be read has a reason instead (never a silent zero). */
enum roundtrim_mem_part {
#define RT_MEM_PART(id, name, meaning) id,
#include "policy/round_fields.def"
    RT_PART_COUNT
};

struct roundtrim_memory_parts {
    const char *skipped; /* why nothing was measured ("exiting"), or NULL */
    uint64_t rss;
    uint64_t read_us; /* how long reading all of it took */
    /* How far the known parts exceed rss: live blocks holding pages never touched (a large
     * calloc served by mmap), which count as live but are not resident. */
    uint64_t over_rss;
    /* Of heap_live, what the allocator's own figures show and the counters did not see (large
     * blocks from glibc's malloc called directly). */
    uint64_t heap_uncounted;
    uint64_t value[RT_PART_COUNT];
    const char *part_skipped[RT_PART_COUNT]; /* set for each part not measured */
    uint32_t largest_arena_permille; /* glibc: the largest arena's share of the heap; 0 unknown */
};

/* The stable name of a part ("heap_live", ...). */
const char *roundtrim_mem_part_name(enum roundtrim_mem_part p);

enum roundtrim_action {
    RT_ACT_GC = 1u << 0,
    RT_ACT_TRIM = 1u << 1,  /* glibc malloc_trim(0) */
    RT_ACT_PURGE = 1u << 2, /* jemalloc arena.<all>.purge */
    RT_ACT_TORCH_EMPTY_CACHE = 1u << 3,
    RT_ACT_CUDA_POOL_TRIM = 1u << 4,
    RT_ACT_CUPY_FREE_BLOCKS = 1u << 5, /* CuPy's device and pinned pools' free_all_blocks() */
};

struct roundtrim_round_record {
    int pid;
    uint64_t round;
    uint64_t merged_rounds; /* earlier boundaries this record also covers (queue was full) */
    double ts;              /* seconds since the epoch */
    const char *source;
    const char *hook; /* "module:qualname" of the Python hook that ended the round, or NULL */
    const char *allocator;
    struct roundtrim_traffic traffic;
    const char *counts_skipped;    /* why traffic was not measured (its counts are then null) */
    const char *signal_rounds_off; /* said once: why the round signal stopped marking rounds */
    bool heap_live_known;
    uint64_t heap_live;
    const char *heap_live_skipped; /* why heap_live was not read, or NULL */
    uint64_t rss_before, rss_after, rss_peak;
    bool cgroup_known;
    uint64_t cgroup_usage, cgroup_limit;
    /* The limit memory pressure is measured against: the cgroup's, else MemTotal (0: unknown).
     * For the metrics file; not in the round's JSON (cgroup_limit is). */
    uint64_t mem_limit;
    bool mem_limit_from_cgroup;
    unsigned actions; /* enum roundtrim_action bits, in the order they ran */
    uint64_t cleanup_us, trim_us;
    uint64_t round_us;       /* wall time since the previous boundary (the first: since start) */
    uint64_t cleanup_cpu_us; /* CPU time the cleanup took, its Python jobs included */
    uint64_t trim_pause_predicted_us; /* with trim_skipped "pause_limit": the pause foreseen */
    /* Trims taken in steps during the round (the pause limit): how many, what they returned,
     * their time; their CPU is in cleanup_cpu_us. */
    uint64_t trim_steps, trim_steps_released_bytes, trim_steps_us;
    /* A trim done in holds of the arenas' locks, each under the pause limit (the round end's and
     * the steps'): how many, the longest, and how many a thread of the program waited for. */
    uint64_t trim_holds, trim_hold_max_us, trim_holds_waited;
    /* Cleanup rounds in a row whose trim the pause limit held back (where no trim in holds was
     * possible), this one included: the diagnosis may say cleanup is held back. */
    uint64_t trim_held_back_rounds;
    bool trim_retry;             /* held back too long: ran anyway, to measure its rate again */
    const char *cleanup_skipped; /* why a due cleanup did not run at all ("exiting"), or NULL */
    bool gc_ran;
    uint64_t gc_collected, gc_us;
    const char *gc_skipped;   /* why a due gc did not run (GIL not free in time, ...), or NULL */
    const char *trim_skipped; /* why a due trim or purge did not run ("program_trim"), or NULL */
    uint64_t torch_empty_cache_us;
    const char *torch_empty_cache_skipped; /* why a due empty_cache did not run, or NULL */
    uint64_t cuda_pool_trim_bytes;
    const char *cuda_pool_trim_skipped; /* why a due pool trim did not run, or NULL */
    uint64_t cupy_free_blocks_us, cupy_released_bytes; /* device bytes CuPy's release returned */
    const char *cupy_free_blocks_skipped; /* why a due release of CuPy's pools did not run */
    /* What each action gave back, measured around it alone: heap and pymalloc bytes gc freed,
     * resident bytes the trim or purge returned, device bytes torch's cache release returned. */
    uint64_t gc_freed_bytes, trim_released_bytes, torch_released_bytes;
    bool memory_read; /* memory was read for this round (false: a pressure cleanup's record) */
    struct roundtrim_memory_parts memory;
    struct roundtrim_cuda_round cuda;
};

/* A JSON writer over bounded text: never writes past cap, and remembers whether it ran out of
 * room. */
struct roundtrim_json {
    struct roundtrim_text text;
    bool need_comma;
};

void roundtrim_json_begin(struct roundtrim_json *j, char *buf, size_t cap);
void roundtrim_json_u64(struct roundtrim_json *j, const char *key, uint64_t v);
void roundtrim_json_i64(struct roundtrim_json *j, const char *key, int64_t v);
void roundtrim_json_str(struct roundtrim_json *j, const char *key, const char *v);
void roundtrim_json_bool(struct roundtrim_json *j, const char *key, bool v);
void roundtrim_json_ts(struct roundtrim_json *j, const char *key, double seconds);
/* part as a percentage of whole with two decimals (12.34); null when whole is 0. */
void roundtrim_json_percent(struct roundtrim_json *j, const char *key, uint64_t part,
                            uint64_t whole);
void roundtrim_json_object_begin(struct roundtrim_json *j, const char *key);
void roundtrim_json_object_end(struct roundtrim_json *j);
void roundtrim_json_array_begin(struct roundtrim_json *j, const char *key);
void roundtrim_json_array_str(struct roundtrim_json *j, const char *v);
void roundtrim_json_array_end(struct roundtrim_json *j);
/* An array element written before (a complete JSON value, copied as it is). */
void roundtrim_json_raw(struct roundtrim_json *j, const char *text, size_t len);
/* Closes the object and appends a newline; returns the length, or 0 when it did not fit. */
size_t roundtrim_json_end(struct roundtrim_json *j);

/* Starts a record: {"event":event,"pid":pid,"ts":ts */
void roundtrim_json_event_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                int pid, double ts);

/* "key":["gc","trim",...]: the actions set in `actions`, in the order they run. */
void roundtrim_json_actions(struct roundtrim_json *j, const char *key, unsigned actions);

/* The four malloc-family counts; when skipped is set, each is null and "counts_skipped" says
 * why. */
void roundtrim_json_traffic(struct roundtrim_json *j, const struct roundtrim_traffic *t,
                            const char *skipped);

/* Formats a round record as one JSON line. Returns its length, 0 if buf was too small. */
size_t roundtrim_round_record_format(const struct roundtrim_round_record *r, char *buf, size_t cap);

/* Stable names of actions, in pipeline order ("gc", "trim", "purge", ...). */
const char *roundtrim_action_name(enum roundtrim_action a);

#endif
