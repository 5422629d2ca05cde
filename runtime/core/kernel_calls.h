/* System calls that glibc wraps only in releases newer than the baseline (glibc 2.17,
 * docs/compatibility.md), made directly: the library must load and behave the same on an
 * older libc. Each returns what the glibc wrapper returns (-1 and errno on failure). */
#ifndef ROUNDTRIM_RUNTIME_CORE_KERNEL_CALLS_H
#define ROUNDTRIM_RUNTIME_CORE_KERNEL_CALLS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* stat, lstat and fstat: real symbols only since glibc 2.33 (before, inline calls of __xstat). */
int roundtrim_stat(const char *path, struct stat *st);
int roundtrim_lstat(const char *path, struct stat *st);
int roundtrim_fstat(int fd, struct stat *st);

/* gettid and tgkill: glibc 2.30. */
pid_t roundtrim_gettid(void);
int roundtrim_tgkill(pid_t tgid, pid_t tid, int sig);

/* getrandom: glibc 2.25. */
ssize_t roundtrim_getrandom(void *buf, size_t len, unsigned flags);

/* renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE): glibc 2.28. */
int roundtrim_rename_noreplace(const char *from, const char *to);

#endif
