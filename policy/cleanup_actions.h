/* The cleanup's actions, in the order they run: the round record's "cleanup" list. */
#ifndef ROUNDTRIM_POLICY_CLEANUP_ACTIONS_H
#define ROUNDTRIM_POLICY_CLEANUP_ACTIONS_H

struct roundtrim_json;

enum roundtrim_action {
    RT_ACT_GC = 1u << 0,
    RT_ACT_TRIM = 1u << 1,  /* glibc malloc_trim(0) */
    RT_ACT_PURGE = 1u << 2, /* jemalloc arena.<all>.purge */
    RT_ACT_TORCH_EMPTY_CACHE = 1u << 3,
    RT_ACT_CUDA_POOL_TRIM = 1u << 4,
    RT_ACT_CUPY_FREE_BLOCKS = 1u << 5, /* CuPy's device and pinned pools' free_all_blocks() */
};

/* Stable names of actions, in pipeline order ("gc", "trim", "purge", ...). */
const char *roundtrim_action_name(enum roundtrim_action a);

/* "key":["gc","trim",...]: the actions set in `actions`, in the order they run. */
void roundtrim_json_actions(struct roundtrim_json *j, const char *key, unsigned actions);

#endif
