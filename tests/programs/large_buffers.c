/* glibc's dynamic mmap threshold at work: after one large block is freed, later blocks of that
 * size come from the heap, and small blocks between them keep the freed ones from going back to
 * the OS. Prints the RSS after the large buffers were freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_rss.h"

#define BUFFERS      64
#define BUFFER_BYTES (4u << 20)

int main(void)
{
    static char *big[BUFFERS], *small[BUFFERS];
    free(malloc(BUFFER_BYTES)); /* raises glibc's threshold to 4 MiB */
    for (int i = 0; i < BUFFERS; i++) {
        big[i] = malloc(BUFFER_BYTES);
        memset(big[i], 1, BUFFER_BYTES);
        small[i] = malloc(64);
    }
    for (int i = 0; i < BUFFERS; i++)
        free(big[i]);
    printf("{\"rss\":%llu}\n", rss_bytes());
    for (int i = 0; i < BUFFERS; i++)
        free(small[i]);
    return 0;
}
