#include "policy/mem_parts.h"

static const char *const part_names[RT_PART_COUNT] = {
#define RT_MEM_PART(id, name, resident, words, meaning) [id] = #name,
#include "policy/mem_parts.def"
};

const char *roundtrim_mem_part_name(enum roundtrim_mem_part p)
{
    return (unsigned)p < RT_PART_COUNT ? part_names[p] : "unknown";
}
