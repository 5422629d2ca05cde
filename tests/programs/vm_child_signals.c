/* A parent with its own SIGUSR1 handler starts children that share its memory until exec, and
 * each child sets SIGUSR1 back to the default first, as CPython's subprocess does:
 *
 *   vm_child_signals vfork|clone|spawn
 *
 * vfork: the child calls sigaction, signal, malloc and free, then execs /bin/true; clone: a
 * clone(CLONE_VM) child (no CLONE_VFORK: the parent waits with waitpid) does the same and ends
 * with _exit; spawn: posix_spawn with SIGUSR1 set to default in the child. Afterwards the parent
 * raises SIGUSR1 and prints "handler ran N" (N = 1 when its handler still runs). */
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t ran;

static void on_usr1(int sig)
{
    (void)sig;
    ran++;
}

static void reset_in_child(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGUSR1, &dfl, NULL);
    signal(SIGUSR1, SIG_DFL);
    free(malloc(100));
}

static int clone_child(void *arg)
{
    (void)arg;
    reset_in_child();
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "vfork";
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_usr1;
    sigaction(SIGUSR1, &act, NULL);
    char *child_argv[] = {"/bin/true", NULL};
    pid_t pid = -1;
    if (strcmp(mode, "vfork") == 0) {
        pid = vfork();
        if (pid == 0) {
            reset_in_child();
            execve("/bin/true", child_argv, environ);
            _exit(127);
        }
    } else if (strcmp(mode, "clone") == 0) {
        size_t size = 256 * 1024;
        char *stack = malloc(size);
        pid = clone(clone_child, stack + size, CLONE_VM | SIGCHLD, NULL);
    } else {
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t def;
        sigemptyset(&def);
        sigaddset(&def, SIGUSR1);
        posix_spawnattr_setsigdefault(&attr, &def);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
        if (posix_spawn(&pid, "/bin/true", NULL, &attr, child_argv, environ) != 0)
            pid = -1;
        posix_spawnattr_destroy(&attr);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, __WALL) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        printf("child failed\n");
        return 1;
    }
    raise(SIGUSR1);
    printf("handler ran %d\n", (int)ran);
    return 0;
}
