#include "policy/cleanup_actions.h"

#include <stddef.h>

#include "policy/json_writer.h"

static const struct {
    enum roundtrim_action action;
    const char *name;
} action_names[] = {
    {RT_ACT_GC, "gc"},
    {RT_ACT_TRIM, "trim"},
    {RT_ACT_PURGE, "purge"},
    {RT_ACT_TORCH_EMPTY_CACHE, "torch_empty_cache"},
    {RT_ACT_CUPY_FREE_BLOCKS, "cupy_free_blocks"},
    {RT_ACT_CUDA_POOL_TRIM, "cuda_pool_trim"},
};

const char *roundtrim_action_name(enum roundtrim_action a)
{
    for (size_t i = 0; i < sizeof action_names / sizeof action_names[0]; i++)
        if (action_names[i].action == a)
            return action_names[i].name;
    return "unknown";
}

void roundtrim_json_actions(struct roundtrim_json *j, const char *k, unsigned actions)
{
    roundtrim_json_array_begin(j, k);
    /* in the order the cleanup runs them */
    for (size_t i = 0; i < sizeof action_names / sizeof action_names[0]; i++)
        if (actions & action_names[i].action)
            roundtrim_json_array_str(j, action_names[i].name);
    roundtrim_json_array_end(j);
}
