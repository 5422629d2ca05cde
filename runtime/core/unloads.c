#include "runtime/core/unloads.h"

uint64_t roundtrim_unloads;

void roundtrim_unload_begin(void)
{
    __atomic_add_fetch(&roundtrim_unloads, 1, __ATOMIC_SEQ_CST);
}

/* Counted as ended and no longer under way in one step: a reader sees both or neither. */
void roundtrim_unload_end(void)
{
    __atomic_add_fetch(&roundtrim_unloads, ROUNDTRIM_UNLOAD_ENDED - 1, __ATOMIC_SEQ_CST);
}
