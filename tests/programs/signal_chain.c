/* A program with a SIGUSR1 handler of its own. It gets N signals, queued as from its launcher
 * (launcher_signal.h), and prints how many
 * its handler saw, what sigaction reports as installed, and the errno its handler left.
 *   signal_chain N {sigaction|siginfo|signal|none|resethand} */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "launcher_signal.h"

static volatile sig_atomic_t seen, seen_info;

static void on_usr1(int sig)
{
    (void)sig;
    seen++;
    errno = EIO; /* a sloppy handler; the interrupted code must not notice */
}

static void on_usr1_info(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    if (sig == SIGUSR1 && info && info->si_pid == getppid()) /* the sender, passed through */
        seen_info++;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    const char *how = argc > 2 ? argv[2] : "sigaction";
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (strcmp(how, "sigaction") == 0 || strcmp(how, "resethand") == 0) {
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_RESTART | (strcmp(how, "resethand") == 0 ? SA_RESETHAND : 0);
        sigaction(SIGUSR1, &sa, NULL);
    } else if (strcmp(how, "siginfo") == 0) {
        sa.sa_sigaction = on_usr1_info;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGUSR1, &sa, NULL);
    } else if (strcmp(how, "signal") == 0) {
        signal(SIGUSR1, on_usr1);
    }
    for (int i = 0; i < n; i++) {
        errno = 0;
        signal_from_launcher(SIGUSR1);
        if (errno != 0)
            printf("errno changed to %d\n", errno);
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
        /* Allocations let roundtrim start its worker after the first signal. */
        free(malloc(32));
    }
    struct sigaction now;
    sigaction(SIGUSR1, NULL, &now);
    const char *installed = (now.sa_flags & SA_SIGINFO)
                                ? (now.sa_sigaction == on_usr1_info ? "on_usr1_info" : "other")
                            : now.sa_handler == on_usr1 ? "on_usr1"
                            : now.sa_handler == SIG_DFL ? "SIG_DFL"
                            : now.sa_handler == SIG_IGN ? "SIG_IGN"
                                                        : "other";
    printf("seen=%d seen_info=%d installed=%s\n", (int)seen, (int)seen_info, installed);
    return 0;
}
