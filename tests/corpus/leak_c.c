/* truth: leak
 * A native program that keeps a 1.5 MiB list of 4 KiB records per round. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < 384; i++) {
            char *p = malloc(4096);
            memset(p, r, 4096); /* kept: never freed */
        }
        void *tmp = malloc(8 << 20);
        memset(tmp, 1, 8 << 20);
        free(tmp);
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
