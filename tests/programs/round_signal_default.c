/* The program's own choice for the round signal (SIGUSR1):
 *
 *   round_signal_default default|signal-default|ignore
 *
 * default: sigaction(SIGUSR1, SIG_DFL) then, after a round by call, raise(SIGUSR1): the process
 * is expected to end by the signal. signal-default: the same through signal(). ignore:
 * signal(SIGUSR1, SIG_IGN), a round by call, raise (nothing happens), then a handler of its own
 * and raise again: prints "ignored, then handled N" (N times the handler ran).
 * default-then-handler: sigaction(SIGUSR1, SIG_DFL), then a handler of its own (as a shell's trap
 * does) and raise: prints "default, then handled N". */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "round_sync.h"

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    handled++;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "default";
    if (strcmp(mode, "ignore") == 0) {
        signal(SIGUSR1, SIG_IGN);
        end_round_and_wait(0);
        raise(SIGUSR1);
        signal(SIGUSR1, on_usr1);
        raise(SIGUSR1);
        printf("ignored, then handled %d\n", (int)handled);
        return 0;
    }
    if (strcmp(mode, "default-then-handler") == 0) {
        struct sigaction act;
        memset(&act, 0, sizeof act);
        act.sa_handler = SIG_DFL;
        sigaction(SIGUSR1, &act, NULL);
        act.sa_handler = on_usr1;
        sigaction(SIGUSR1, &act, NULL);
        raise(SIGUSR1);
        end_round_and_wait(0);
        printf("default, then handled %d\n", (int)handled);
        return 0;
    }
    if (strcmp(mode, "signal-default") == 0) {
        signal(SIGUSR1, SIG_DFL);
    } else {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGUSR1, &dfl, NULL);
    }
    end_round_and_wait(0);
    fflush(stdout);
    raise(SIGUSR1);
    printf("survived SIGUSR1\n");
    return 0;
}
