/* The exec family: a process that replaces its program records its pending rounds and an "exec"
 * record with its totals first, within the exit budget, as it would at exit; the new program
 * starts a log of its own. glibc's exec functions call its internal execve directly, so each
 * exported one is wrapped. A vfork or posix_spawn child, and a process with nothing of its own to
 * record, go straight to libc. When exec fails the program carries on and nothing else changes. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "runtime/core/export.h"
#include "shim/start.h"
#include "runtime/rounds/round.h"
#include "runtime/core/settings.h"
#include "runtime/core/vm_child.h"
#include "runtime/core/real_dlsym.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;
static fexecve_fn real_fexecve;
static execveat_fn real_execveat; /* glibc >= 2.34 */

/* exec is async-signal-safe and dlsym is not: look them up before anyone can call them. */
void roundtrim_exec_hooks_resolve(void)
{
    real_execve = (execve_fn)roundtrim_next_symbol("execve");
    real_execvpe = (execve_fn)roundtrim_next_symbol("execvpe");
    real_execv = (execv_fn)roundtrim_next_symbol("execv");
    real_execvp = (execv_fn)roundtrim_next_symbol("execvp");
    real_fexecve = (fexecve_fn)roundtrim_next_symbol("fexecve");
    real_execveat = (execveat_fn)roundtrim_next_symbol("execveat");
}

static void record_exec(void)
{
    /* Called before the constructor ran (from another library's constructor): look them up now,
     * as unshare and setns do, rather than fail the program's exec. */
    if (!__atomic_load_n(&real_execve, __ATOMIC_ACQUIRE))
        roundtrim_exec_hooks_resolve();
    if (!roundtrim_active() || roundtrim_in_vm_child() || !roundtrim_round_exit_wanted())
        return;
    int saved_errno = errno;
    roundtrim_round_at_exec();
    errno = saved_errno;
}

static int unresolved(void)
{
    errno = ENOSYS;
    return -1;
}

ROUNDTRIM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    record_exec();
    return real_execve ? real_execve(path, argv, envp) : unresolved();
}

ROUNDTRIM_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    record_exec();
    return real_execvpe ? real_execvpe(file, argv, envp) : unresolved();
}

ROUNDTRIM_EXPORT int execv(const char *path, char *const argv[])
{
    record_exec();
    return real_execv ? real_execv(path, argv) : unresolved();
}

ROUNDTRIM_EXPORT int execvp(const char *file, char *const argv[])
{
    record_exec();
    return real_execvp ? real_execvp(file, argv) : unresolved();
}

ROUNDTRIM_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    record_exec();
    return real_fexecve ? real_fexecve(fd, argv, envp) : unresolved();
}

ROUNDTRIM_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                              int flags)
{
    record_exec();
    return real_execveat ? real_execveat(dirfd, path, argv, envp, flags) : unresolved();
}

/* The list forms: the arguments are gathered on the stack (no allocation after a fork) and
 * handed to the vector form, which records. */
static size_t count_args(const char *arg0, va_list ap)
{
    if (!arg0)
        return 0; /* an empty argument list */
    size_t n = 1;
    va_list aq;
    va_copy(aq, ap);
    while (va_arg(aq, const char *))
        n++;
    va_end(aq);
    return n;
}

/* argv[0 .. n-1] from arg0 and the list, then NULL; leaves *ap past the list's NULL. */
static void gather_args(char **argv, size_t n, const char *arg0, va_list *ap)
{
    argv[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        argv[i] = va_arg(*ap, char *);
    if (arg0)
        (void)va_arg(*ap, char *);
    argv[n] = NULL;
}

ROUNDTRIM_EXPORT int execl(const char *path, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    size_t n = count_args(arg0, ap);
    char *argv[n + 1];
    gather_args(argv, n, arg0, &ap);
    va_end(ap);
    return execv(path, argv);
}

ROUNDTRIM_EXPORT int execlp(const char *file, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    size_t n = count_args(arg0, ap);
    char *argv[n + 1];
    gather_args(argv, n, arg0, &ap);
    va_end(ap);
    return execvp(file, argv);
}

ROUNDTRIM_EXPORT int execle(const char *path, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    size_t n = count_args(arg0, ap);
    char *argv[n + 1];
    gather_args(argv, n, arg0, &ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
