#include "runtime/core/kernel_calls.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct stat is glibc's on x86-64 and on aarch64 (the generic 64-bit layout), and
 * newfstatat is what glibc's own stat calls there. */
int roundtrim_stat(const char *path, struct stat *st)
{
    return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

int roundtrim_lstat(const char *path, struct stat *st)
{
    return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int roundtrim_fstat(int fd, struct stat *st)
{
    return (int)syscall(SYS_fstat, fd, st);
}

pid_t roundtrim_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

int roundtrim_tgkill(pid_t tgid, pid_t tid, int sig)
{
    return (int)syscall(SYS_tgkill, tgid, tid, sig);
}

ssize_t roundtrim_getrandom(void *buf, size_t len, unsigned flags)
{
    return (ssize_t)syscall(SYS_getrandom, buf, len, flags);
}

int roundtrim_rename_noreplace(const char *from, const char *to)
{
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
