/* Whether the program's first block of 200 KiB is mapped on its own (glibc's mmap threshold is
 * 128 KiB until a larger mapped block is freed): what glibc decides, as without roundtrim.
 * Prints one JSON line; reads glibc's chunk header, so meaningful with glibc's malloc only. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    void *p = malloc(200 * 1024);
    if (!p)
        return 2;
    int mapped = (((size_t *)p)[-1] & 2) != 0; /* IS_MMAPPED */
    printf("{\"mapped\":%d}\n", mapped);
    free(p);
    return 0;
}
