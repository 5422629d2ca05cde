/* Gets the round signal as from its launcher, then stays idle (no allocation) and watches the log
 * for the round's record with plain system calls. Prints whether the record came while idle. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "launcher_signal.h"
#include "round_sync.h"

int main(void)
{
    const char *log = getenv("ROUNDTRIM_LOG");
    if (!log)
        return 2;
    signal_from_launcher(SIGUSR1);
    int seen = 0;
    for (int i = 0; i < 150 && !seen; i++) { /* 3 s */
        struct timespec t = {0, 20 * 1000 * 1000};
        nanosleep(&t, NULL);
        seen = log_round_count(log, getpid()) > 0;
    }
    printf("%s\n", seen ? "recorded while idle" : "not recorded while idle");
    return 0;
}
