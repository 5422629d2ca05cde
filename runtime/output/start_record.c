#include "runtime/output/start_record.h"

#include <limits.h>
#include <unistd.h>

#include "policy/record_put.h"
#include "policy/round_record.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/page_release.h"
#include "runtime/output/log_writer.h"
#include "runtime/output/no_rounds.h"
#include "runtime/python/round_hook.h"
#include "runtime/sites/sampler.h"
#include "runtime/core/settings.h"

/* Every option: its value and where it came from. */
static void put_SETTINGS(struct roundtrim_json *j, const char *key,
                         const struct roundtrim_config *cfg)
{
    struct roundtrim_json *rt_out = j;
    roundtrim_json_object_begin(j, key);
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        enum roundtrim_option_id id = (enum roundtrim_option_id)i;
        char value[512];
        roundtrim_config_value_text(cfg, id, value, sizeof value);
        roundtrim_json_object_begin(j, roundtrim_options[id].name);
#define RT_SETTING_FIELD RT_PUT_ROW
#include "runtime/output/start_fields.def"
        roundtrim_json_object_end(j);
    }
    roundtrim_json_object_end(j);
}

static void put_HOOK_LIST(struct roundtrim_json *j, const char *key, enum roundtrim_hook_list which)
{
    roundtrim_py_hooks_list_json(j, key, which);
}

size_t roundtrim_start_record_format(char *buf, size_t cap)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
    if (n < 0) /* Linux before 3.17; after the main thread ended, self is its zombie */
        n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';

    struct roundtrim_json j, *rt_out = &j;
    roundtrim_log_record_begin(&j, buf, cap, "start", roundtrim_start_time());
#define RT_EVENT_FIELD RT_PUT_ROW
#include "runtime/output/start_fields.def"
    return roundtrim_json_end(&j);
}
