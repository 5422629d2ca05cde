#include "runtime/core/pages.h"

#include <sys/mman.h>

void *roundtrim_pages_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void roundtrim_pages_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
