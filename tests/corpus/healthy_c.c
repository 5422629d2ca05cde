/* truth: none
 * A native loop: each round allocates and frees a working set of blocks of many sizes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    enum { N = 20000 };
    static void *b[N];
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < N; i++) {
            size_t n = 64 + (size_t)((i * 131 + r * 17) % 4000);
            b[i] = malloc(n);
            memset(b[i], 1, n);
        }
        for (int i = 0; i < N; i++)
            free(b[i]);
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
