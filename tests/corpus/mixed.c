/* truth: leak
 * expect: mixed
 * Keeps 3 MiB of malloc blocks and maps 3 MiB of anonymous memory of its own per round: a leak
 * and growth outside the heap, half each. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

int main(void)
{
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < 48; i++) {
            char *p = malloc(64 << 10);
            memset(p, 1, 64 << 10);
        }
        char *m = mmap(NULL, 3 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
            memset(m, 2, 3 << 20);
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return 0;
}
