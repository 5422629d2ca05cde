/* The round signal as a launcher sends it, delivered at once to the calling thread. A program
 * that raises its round signal at itself (raise, kill(getpid())) with no handler of its own asks
 * for the signal's default action, and gets it under roundtrim too; test programs that stand for
 * a process signalled by its launcher queue the signal with the parent as its sender instead. */
#ifndef ROUNDTRIM_TEST_LAUNCHER_SIGNAL_H
#define ROUNDTRIM_TEST_LAUNCHER_SIGNAL_H

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((unused)) static int signal_from_launcher(int sig)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = sig;
    info.si_code = SI_QUEUE;
    info.si_pid = getppid();
    info.si_uid = getuid();
    return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &info);
}

#endif
