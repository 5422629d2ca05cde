/* A library whose constructor installs a SIGUSR1 handler, as some runtimes do at load time.
 * Preloaded before or after roundtrim, its handler must keep seeing every signal. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t calls;

static void early_handler(int sig)
{
    (void)sig;
    calls++;
}

__attribute__((constructor)) static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = early_handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
}

__attribute__((destructor)) static void report(void)
{
    if (getenv("EARLY_HANDLER_REPORT"))
        printf("early handler calls: %d\n", (int)calls);
}
