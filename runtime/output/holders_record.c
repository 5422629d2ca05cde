#include "runtime/output/holders_record.h"

#include <unistd.h>

#include "policy/json_writer.h"
#include "runtime/core/clock.h"
#include "runtime/output/log_writer.h"

/* Worker only: a static buffer. */
static char line[4096];

void roundtrim_holders_record(uint64_t round, const struct roundtrim_holders_walk *walk)
{
    struct roundtrim_json j;
    roundtrim_json_event_begin(&j, line, sizeof line, "holders", (int)getpid(),
                               roundtrim_wall_seconds());
    roundtrim_json_u64(&j, "round", round);
    roundtrim_json_u64(&j, "walk_from_round", walk->from_round);
    roundtrim_json_u64(&j, "objects", walk->objects);
    roundtrim_json_u64(&j, "gil_us", walk->gil_us);
    roundtrim_json_u64(&j, "steps", walk->steps);
    roundtrim_json_array_begin(&j, "holders");
    for (int i = 0; i < walk->count; i++) {
        const struct roundtrim_holder *h = &walk->holder[i];
        char item[512];
        struct roundtrim_json o;
        roundtrim_json_begin(&o, item, sizeof item);
        roundtrim_json_str(&o, "path", h->path);
        roundtrim_json_str(&o, "type", h->type);
        roundtrim_json_u64(&o, "length", h->length);
        /* thousandths of an item a round, with two decimals */
        roundtrim_json_percent(&o, "items_per_round", h->milli_items_per_round, 100000);
        roundtrim_json_u64(&o, "bytes_per_round", h->bytes_per_round);
        size_t len = roundtrim_json_end(&o);
        if (len > 1)
            roundtrim_json_raw(&j, item, len - 1); /* without its newline */
    }
    roundtrim_json_array_end(&j);
    size_t len = roundtrim_json_end(&j);
    if (len > 0)
        roundtrim_log_write(line, len);
}
