#include "runtime/output/start_record.h"

#include <limits.h>
#include <unistd.h>

#include "policy/json_writer.h"
#include "runtime/alloc/allocator_ops.h"
#include "runtime/alloc/page_release.h"
#include "runtime/output/no_rounds.h"
#include "runtime/python/hook.h"
#include "runtime/sites/sampler.h"
#include "runtime/core/settings.h"

size_t roundtrim_start_record_format(char *buf, size_t cap)
{
    const struct roundtrim_config *cfg = roundtrim_config();
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
    if (n < 0) /* Linux before 3.17; after the main thread ended, self is its zombie */
        n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';

    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, buf, cap, "start", getpid(), roundtrim_start_time());
    roundtrim_json_i64(&j, "ppid", getppid());
    roundtrim_json_str(&j, "exe", exe);
    roundtrim_json_str(&j, "role", roundtrim_role_name(cfg->role));
    roundtrim_json_str(&j, "allocator", roundtrim_allocator_name());
    if (roundtrim_allocator_kind() == RT_ALLOC_GLIBC)
        roundtrim_json_str(&j, "page_release", roundtrim_page_release_path());
    if (roundtrim_allocator_counts_skipped())
        roundtrim_json_str(&j, "counts_skipped",
                           roundtrim_skip_name(roundtrim_allocator_counts_skipped()));
    roundtrim_json_object_begin(&j, "settings");
    for (int id = 0; id < RT_OPT_COUNT; id++) {
        char value[512];
        roundtrim_config_value_text(cfg, (enum roundtrim_option_id)id, value, sizeof value);
        roundtrim_json_object_begin(&j, roundtrim_options[id].name);
        roundtrim_json_str(&j, "value", value);
        roundtrim_json_str(&j, "source",
                           roundtrim_config_source_text(cfg, (enum roundtrim_option_id)id));
        roundtrim_json_object_end(&j);
    }
    roundtrim_json_object_end(&j);
    roundtrim_py_hooks_start_json(&j);
    /* null while sampling runs; "off" when not asked for; else why it could not start */
    roundtrim_json_str(&j, "sites_skipped", roundtrim_sampler_skipped());
    /* null where the samples carry native frames; "libunwind_missing": Python frames only */
    roundtrim_json_str(&j, "sites_native_skipped", roundtrim_sampler_native_skipped());
    const char *no_rounds = roundtrim_no_rounds_note();
    if (no_rounds)
        roundtrim_json_str(&j, "no_rounds", no_rounds);
    return roundtrim_json_end(&j);
}
