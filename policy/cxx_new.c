#include "policy/cxx_new.h"

size_t roundtrim_cxx_memalign_alignment(size_t requested)
{
    if (requested == 0 || (requested & (requested - 1)))
        return 0;
    return requested < sizeof(void *) ? sizeof(void *) : requested;
}
