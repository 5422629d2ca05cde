/* Ends N rounds through roundtrim_round_end() as fast as it can, then exits at once, normally or
 * through _exit:  round_burst N [exit|_exit] [first|paced]. With "first", the first round's record
 * is waited for before the others; with "paced", it pauses 50 ms after every 300 calls (the worker
 * catches up a little, the burst goes on). Without roundtrim it only exits. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "round_sync.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    int i = 0;
    if (argc > 3 && strcmp(argv[3], "first") == 0 && end_round_and_wait(i++) != 0)
        return 3;
    bool paced = argc > 3 && strcmp(argv[3], "paced") == 0;
    for (; i < n && round_end; i++) {
        round_end();
        if (paced && i % 300 == 299) {
            struct timespec t = {0, 50 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
    }
    if (argc > 2 && strcmp(argv[2], "_exit") == 0)
        _exit(0);
    return 0;
}
