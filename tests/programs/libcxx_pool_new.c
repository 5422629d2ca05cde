/* An allocator library that supplies operator new and delete itself (as a pool allocator or
 * mimalloc's override object does), opened by the host with RTLD_GLOBAL so that libraries opened
 * after it use its operators. Counts the blocks it served. Written in C: its operators are plain
 * symbols, and no C++ runtime comes with it. */
#include <stddef.h>
#include <stdlib.h>

__attribute__((visibility("default"))) int pool_served;

__attribute__((visibility("default"))) void *_Znwm(size_t n)
{
    pool_served++;
    return malloc(n ? n : 1);
}

__attribute__((visibility("default"))) void _ZdlPv(void *p)
{
    free(p);
}

__attribute__((visibility("default"))) void _ZdlPvm(void *p, size_t n)
{
    (void)n;
    free(p);
}
