/* truth: leak
 * One buffer grown by realloc 1 MiB a round (a growing log), among 500 temporary blocks. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
void roundtrim_round_end(void) __attribute__((weak));
int main(void)
{
    char *v = NULL;
    size_t n = 0;
    for (int r = 0; r < 24; r++) {
        n += 1 << 20;
        v = realloc(v, n);
        memset(v, 1, n);
        for (int i = 0; i < 500; i++) {
            void *t = malloc(4096 + i);
            memset(t, 2, 64);
            free(t);
        }
        if (roundtrim_round_end)
            roundtrim_round_end();
        usleep(20000);
    }
    return v[5] == 7;
}
