/* truth: none
 * expect: finding=free_heap_level
 * env: ROUNDTRIM_GC_ROUNDS=0
 * Cleanup off. Each round builds 48 MiB of 1-2 KiB blocks and frees all but one in 32, which
 * live until the next round: the freed heap stays resident at a flat level far above what is
 * live. Nothing grows; the level is wasteful. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

enum { N = 32768, KEEP = 32 };
static void *blocks[N], *survivors[N / KEEP];

int main(void)
{
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < N; i++) {
            size_t n = 1024 + (size_t)((i * 37 + r * 11) % 1024);
            blocks[i] = malloc(n);
            memset(blocks[i], 1, n);
        }
        for (int i = 0; i < N / KEEP; i++)
            free(survivors[i]);
        for (int i = 0; i < N; i++) {
            if (i % KEEP == 0)
                survivors[i / KEEP] = blocks[i];
            else
                free(blocks[i]);
        }
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
