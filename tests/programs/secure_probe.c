/* Run as a setuid program by an unprivileged user (secure-exec), with roundtrim loaded: ends
 * rounds, allocates, sleeps a little, then prints what a test needs to see that roundtrim did
 * nothing in it: whether this is secure-exec, whether roundtrim is mapped, how many threads run,
 * and who handles SIGUSR1 and SIGUSR2. Exits with 7 so that a changed exit status shows.
 * The same binary run by its owner is not secure-exec: there roundtrim works as usual. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "thread_count.h"

static int roundtrim_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "libroundtrim"))
            found = 1;
    if (f)
        fclose(f);
    return found;
}

/* Whether the kernel has a handler installed for sig (SigCgt), whatever sigaction reports. */
static const char *handler_of(int sig)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long caught = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "SigCgt:", 7) == 0)
            caught = strtoull(line + 7, NULL, 16);
    if (f)
        fclose(f);
    return caught >> (sig - 1) & 1 ? "caught" : "not-caught";
}

int main(void)
{
    void (*round_end)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 1000; i++)
            free(malloc((size_t)i * 10 + 1));
        if (round_end)
            round_end();
        struct timespec t = {0, 5 * 1000 * 1000}; /* a timer or sampler would run by now */
        nanosleep(&t, NULL);
    }
    printf("secure=%lu mapped=%d api=%d threads=%d usr1=%s usr2=%s\n", getauxval(AT_SECURE),
           roundtrim_mapped(), round_end != NULL, thread_count(), handler_of(SIGUSR1),
           handler_of(SIGUSR2));
    return 7;
}
