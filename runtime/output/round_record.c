#include "runtime/output/round_record.h"

#include "policy/round_record.h"
#include "runtime/core/settings.h"
#include "runtime/output/log_writer.h"

bool roundtrim_round_record_write(const struct roundtrim_round_record *r)
{
    char line[4096];
    size_t n = roundtrim_round_record_format(r, line, sizeof line);
    return n == 0 || roundtrim_log_write(line, n) || !roundtrim_config()->log_path;
}
