#include "runtime/output/holders_record.h"

#include "policy/record_put.h"
#include "runtime/core/clock.h"
#include "runtime/output/log_writer.h"

/* Worker only: a static buffer. */
static char line[4096];

/* Each holder, an object of the array. */
static void put_HOLDERS(struct roundtrim_json *j, const char *key,
                        const struct roundtrim_holders_walk *w)
{
    roundtrim_json_array_begin(j, key);
    for (int i = 0; i < w->count; i++) {
        const struct roundtrim_holder *h = &w->holder[i];
        char item[512];
        struct roundtrim_json o, *rt_out = &o;
        roundtrim_json_begin(&o, item, sizeof item);
#define RT_HOLDER_FIELD RT_PUT_ROW
#include "runtime/output/holders_fields.def"
        size_t len = roundtrim_json_end(&o);
        if (len > 1)
            roundtrim_json_raw(j, item, len - 1); /* without its newline */
    }
    roundtrim_json_array_end(j);
}

void roundtrim_holders_record(uint64_t round, const struct roundtrim_holders_walk *w)
{
    struct roundtrim_json j, *rt_out = &j;
    roundtrim_log_record_begin(&j, line, sizeof line, "holders", roundtrim_wall_seconds());
#define RT_EVENT_FIELD RT_PUT_ROW
#include "runtime/output/holders_fields.def"
    roundtrim_log_record_write(&j);
}
