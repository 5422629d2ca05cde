#include "runtime/core/safe_file.h"
#include "runtime/core/fd_guard.h"
#include "runtime/core/hash.h"
#include "runtime/core/kernel_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HIGH_FD 200

/* "is a FIFO" and the like, for a warning; roundtrim_file_kind drops the "is ". */
static const char *is_kind(mode_t mode)
{
    static const struct {
        mode_t type;
        const char *text;
    } kinds[] = {
        {S_IFREG, "is a regular file"}, {S_IFLNK, "is a symbolic link"},
        {S_IFDIR, "is a directory"},    {S_IFIFO, "is a FIFO"},
        {S_IFSOCK, "is a socket"},      {S_IFCHR, "is a character device"},
        {S_IFBLK, "is a block device"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((mode & S_IFMT) == kinds[i].type)
            return kinds[i].text;
    return "is not a regular file";
}

const char *roundtrim_file_kind(mode_t mode)
{
    return is_kind(mode) + 3;
}

const char *roundtrim_file_foreign(const char *path, const struct stat *st)
{
    if (st->st_uid == geteuid())
        return NULL;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir)
        return "is in a directory whose name is too long to examine";
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat d;
    if (roundtrim_stat(!slash ? "." : n ? dir : "/", &d) != 0)
        return "is in a directory that cannot be examined";
    if (!(d.st_mode & S_ISVTX) || !(d.st_mode & (S_IWOTH | S_IWGRP)) || st->st_uid == d.st_uid)
        return NULL;
    return d.st_mode & S_IWOTH ? "belongs to another user in a sticky, world-writable directory"
                               : "belongs to another user in a sticky, group-writable directory";
}

/* The kernel's own file systems: a "file" there is a setting or a control (ROUNDTRIM_LOG=
 * /proc/sys/kernel/hostname would rename the host), never a log. */
static const char *pseudo_fs(long type)
{
    static const struct {
        long type;
        const char *text;
    } kinds[] = {
        {0x9fa0, "is on procfs"},
        {0x62656572, "is on sysfs"},
        {0x27e0eb, "is on a cgroup file system"},
        {0x63677270, "is on a cgroup file system"},
        {0x64626720, "is on debugfs"},
        {0x74726163, "is on tracefs"},
        {0x73636673, "is on securityfs"},
        {0x62656570, "is on configfs"},
        {(long)0xcafe4a11, "is on bpffs"},
        {0x6165676c, "is on pstore"},
        {(long)0xde5e81e4, "is on efivarfs"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (type == kinds[i].type)
            return kinds[i].text;
    return NULL;
}

/* A file of another kind is refused before it is opened: opening some devices acts (a watchdog
 * starts counting, a tape rewinds), and opening a FIFO may block. So is a file someone else may
 * have planted for us to write into. */
static bool refuse_existing(const char *path, bool writing, const char **why)
{
    struct stat st;
    if (roundtrim_lstat(path, &st) != 0)
        return false;
    *why = !S_ISREG(st.st_mode) ? is_kind(st.st_mode)
           : writing            ? roundtrim_file_foreign(path, &st)
                                : NULL;
    struct statfs fs;
    if (!*why && writing && statfs(path, &fs) == 0)
        *why = pseudo_fs((long)fs.f_type);
    return *why != NULL;
}

/* After open: still a regular file (the path may have been swapped since the lstat), and for
 * writing not on one of the kernel's own file systems. */
static bool keep_opened(int fd, bool writing, struct stat *st, const char **why)
{
    if (roundtrim_fstat(fd, st) != 0) {
        *why = strerror(errno);
        return false;
    }
    if (!S_ISREG(st->st_mode)) {
        *why = is_kind(st->st_mode);
        return false;
    }
    struct statfs fs;
    if (writing && fstatfs(fd, &fs) == 0 && (*why = pseudo_fs((long)fs.f_type)))
        return false;
    return true;
}

static int move_high(int fd)
{
    if (fd >= HIGH_FD)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

int roundtrim_dup_high(int fd)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
    return copy >= 0 || errno == EBADF ? copy : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

int roundtrim_open_append(const char *path, struct roundtrim_file_id *id, const char **why)
{
    if (refuse_existing(path, true, why))
        return -1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0) {
        *why = errno == ELOOP ? "is a symbolic link" : strerror(errno);
        return -1;
    }
    struct stat st;
    if (!keep_opened(fd, true, &st, why)) {
        close(fd);
        return -1;
    }
    /* A second name for the file may be a planted hard link to a file nobody meant to append to
     * (a log path in a world-writable directory). */
    if (st.st_nlink > 1) {
        *why = "has more than one hard link";
        close(fd);
        return -1;
    }
    /* Planted between the look above and the open (opening it for appending changed nothing). */
    const char *foreign = roundtrim_file_foreign(path, &st);
    if (foreign) {
        *why = foreign;
        close(fd);
        return -1;
    }
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return move_high(fd);
}

int roundtrim_open_read(const char *path)
{
    const char *why;
    if (refuse_existing(path, false, &why)) {
        errno = EINVAL;
        return -1;
    }
    roundtrim_fd_guard_enter();
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        roundtrim_fd_guard_leave();
        return -1;
    }
    roundtrim_fd_guard_note(fd);
    struct stat st;
    if (!keep_opened(fd, false, &st, &why)) {
        roundtrim_fd_guard_close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

static uint64_t random_bits(void)
{
    uint64_t r;
    if (roundtrim_getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    /* No entropy yet (early boot): still differs between processes and calls. */
    static uint64_t counter;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    r = roundtrim_hash_mix((uint64_t)t.tv_nsec ^ (uint64_t)getpid() << 32,
                           __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) ^
                               (uint64_t)(uintptr_t)&r);
    return r;
}

int roundtrim_create_beside(const char *path, char *tmp, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    const char *name = slash ? slash + 1 : path;
    int namelen = (int)strnlen(name, 200); /* the temporary name must stay under NAME_MAX */
    for (int attempt = 0; attempt < 16; attempt++) {
        int n = snprintf(tmp, cap, "%.*s.%.*s.%016llx.tmp", dirlen, path, namelen, name,
                         (unsigned long long)random_bits());
        if (n < 0 || (size_t)n >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        roundtrim_fd_guard_enter();
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (fd >= 0) {
            fd = move_high(fd);
            roundtrim_fd_guard_note(fd);
            return fd;
        }
        int err = errno;
        roundtrim_fd_guard_leave();
        if (err != EEXIST)
            return -1;
        errno = err;
    }
    return -1;
}

bool roundtrim_fd_id(int fd, struct roundtrim_file_id *id)
{
    struct stat st;
    if (fd < 0 || roundtrim_fstat(fd, &st) != 0)
        return false;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return true;
}

bool roundtrim_fd_is(int fd, const struct roundtrim_file_id *id)
{
    struct stat st;
    return fd >= 0 && roundtrim_fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

/* A signal our own write raised (and that was not pending before) is taken back, unseen. */
static void take_back(int sig, const sigset_t *before)
{
    sigset_t now;
    if (sigismember(before, sig) || sigpending(&now) != 0 || !sigismember(&now, sig))
        return;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct timespec zero = {0, 0};
    sigtimedwait(&one, NULL, &zero);
}

size_t roundtrim_write_quiet(int fd, const char *const *bufs, const size_t *lens, int count)
{
    struct iovec iov[8];
    if (count > 8)
        count = 8;
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        iov[i] = (struct iovec){(void *)bufs[i], lens[i]};
        total += lens[i];
    }
    sigset_t quiet, old, before;
    sigemptyset(&quiet);
    sigaddset(&quiet, SIGPIPE);
    sigaddset(&quiet, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &quiet, &old);
    sigpending(&before);

    size_t done = 0;
    int err = 0, at = 0;
    while (done < total) {
        ssize_t n = writev(fd, iov + at, count - at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        done += (size_t)n;
        for (size_t left = (size_t)n; left > 0 && at < count;) {
            size_t step = left < iov[at].iov_len ? left : iov[at].iov_len;
            iov[at].iov_base = (char *)iov[at].iov_base + step;
            iov[at].iov_len -= step;
            left -= step;
            if (iov[at].iov_len == 0)
                at++;
        }
    }

    take_back(SIGPIPE, &before);
    take_back(SIGXFSZ, &before);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return done;
}
