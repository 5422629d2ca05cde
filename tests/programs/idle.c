/* Allocates a little and exits, printing how many threads it had at the end. With roundtrim
 * preloaded and no round boundary, that must be 1 and nothing may be written. */
#include <stdio.h>
#include <stdlib.h>

#include "thread_count.h"

int main(void)
{
    for (int i = 0; i < 1000; i++)
        free(malloc((size_t)i * 10 + 1));
    printf("threads=%d\n", thread_count());
    return 0;
}
