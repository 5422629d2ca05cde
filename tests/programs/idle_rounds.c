/* A native program idle between rounds: in each round it makes a known set of allocations, then
 * ends the round with SIGUSR1 and sleeps 100 ms without allocating, never waiting for a record.
 * At the end it prints, per round, what it allocated and freed as the allocator sees it (usable
 * sizes), for a test to compare with the round log.
 *
 *   idle_rounds N    N rounds (at most 16)
 *   idle_rounds 0    one signal at once, nothing allocated: round 1 is what ran before main
 *   idle_rounds 0 _exit   the same, then _exit(0) at once: roundtrim's worker never started */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "launcher_signal.h"

struct counts {
    unsigned long malloc_calls, free_calls, malloc_bytes, free_bytes;
};

static struct counts want[16];
static void *kept[16];

static void one_round(int r)
{
    void *blocks[32];
    int n = 3 + r;
    for (int i = 0; i < n; i++) {
        blocks[i] = malloc(100 + 1000 * (size_t)r + (size_t)i);
        want[r].malloc_calls++;
        want[r].malloc_bytes += malloc_usable_size(blocks[i]);
    }
    for (int i = 0; i < n - 1; i++) {
        want[r].free_calls++;
        want[r].free_bytes += malloc_usable_size(blocks[i]);
        free(blocks[i]);
    }
    kept[r] = blocks[n - 1]; /* one block of each round lives on */
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    if (rounds < 0 || rounds > 16)
        return 2;
    struct timespec pause = {0, 100 * 1000 * 1000};
    if (rounds == 0) {
        signal_from_launcher(SIGUSR1);
        if (argc > 2 && strcmp(argv[2], "_exit") == 0)
            _exit(0);
        nanosleep(&pause, NULL);
    }
    for (int r = 0; r < rounds; r++) {
        one_round(r);
        signal_from_launcher(SIGUSR1);
        nanosleep(&pause, NULL);
    }
    for (int r = 0; r < rounds; r++)
        printf("{\"round\":%d,\"malloc_calls\":%lu,\"free_calls\":%lu,\"malloc_bytes\":%lu,"
               "\"free_bytes\":%lu}\n",
               r + 1, want[r].malloc_calls, want[r].free_calls, want[r].malloc_bytes,
               want[r].free_bytes);
    return 0;
}
