#include "runtime/alloc/page_release.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/core/fd_guard.h"
#include "runtime/core/pages.h"

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
/* Linux 6.14: the calling process, without a descriptor (include/uapi/linux/pidfd.h). */
#define PIDFD_SELF_PROCESS (-20000)

enum path { PATH_UNKNOWN, PATH_SELF, PATH_PIDFD, PATH_ONE_BY_ONE };
static int path = PATH_UNKNOWN;

static long process_madvise_call(int pidfd, const struct iovec *iov, unsigned n)
{
    return syscall(SYS_process_madvise, pidfd, iov, (unsigned long)n, MADV_DONTNEED, 0u);
}

/* Releases a page of our own that holds a byte through pidfd: the kernel must say it released
 * the page and the page must read back as zero. */
static bool releases_own_page(int pidfd)
{
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = roundtrim_pages_map((size_t)page);
    if (!p)
        return false;
    p[0] = 1;
    struct iovec iov = {.iov_base = (void *)p, .iov_len = (size_t)page};
    bool ok = process_madvise_call(pidfd, &iov, 1) == page && p[0] == 0;
    roundtrim_pages_unmap((void *)p, (size_t)page);
    return ok;
}

static int open_own_pidfd(void)
{
    roundtrim_fd_guard_enter();
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0u);
    if (fd < 0) {
        roundtrim_fd_guard_leave();
        return -1;
    }
    roundtrim_fd_guard_note(fd);
    return fd;
}

static int find_path(void)
{
    if (releases_own_page(PIDFD_SELF_PROCESS))
        return PATH_SELF;
    int fd = open_own_pidfd();
    bool ok = fd >= 0 && releases_own_page(fd);
    if (fd >= 0)
        roundtrim_fd_guard_close(fd);
    return ok ? PATH_PIDFD : PATH_ONE_BY_ONE;
}

static int current_path(void)
{
    int p = __atomic_load_n(&path, __ATOMIC_ACQUIRE);
    if (p == PATH_UNKNOWN) {
        p = find_path(); /* two threads finding it at once find the same */
        __atomic_store_n(&path, p, __ATOMIC_RELEASE);
    }
    return p;
}

const char *roundtrim_page_release_path(void)
{
    return current_path() == PATH_ONE_BY_ONE ? "madvise" : "process_madvise";
}

bool roundtrim_page_release_batched(void)
{
    return current_path() != PATH_ONE_BY_ONE;
}

void roundtrim_page_release_begin(struct roundtrim_release_session *s)
{
    s->opened = false;
    switch (current_path()) {
    case PATH_SELF:
        s->pidfd = PIDFD_SELF_PROCESS;
        break;
    case PATH_PIDFD:
        s->pidfd = open_own_pidfd();
        s->opened = s->pidfd >= 0;
        break;
    default:
        s->pidfd = -1;
    }
}

void roundtrim_page_release_end(struct roundtrim_release_session *s)
{
    if (s->opened)
        roundtrim_fd_guard_close(s->pidfd);
    s->opened = false;
    s->pidfd = -1;
}

static void one_by_one(const struct iovec *iov, unsigned n, struct roundtrim_release_done *done)
{
    for (unsigned i = 0; i < n; i++) {
        done->calls++;
        if (madvise(iov[i].iov_base, iov[i].iov_len, MADV_DONTNEED) == 0)
            done->bytes += iov[i].iov_len;
    }
}

void roundtrim_page_release(struct roundtrim_release_session *s, const struct iovec *iov,
                            unsigned n, struct roundtrim_release_done *done)
{
    if (s->pidfd == -1) {
        one_by_one(iov, n, done);
        return;
    }
    /* The kernel stops at a range it cannot advise (or at a signal), answering the bytes done
     * before it: the rest goes on from the range after. After an error (or a call that made no
     * progress twice), the rest goes one by one. */
    unsigned at = 0, stalls = 0;
    while (at < n) {
        done->calls++;
        long r = process_madvise_call(s->pidfd, iov + at, n - at);
        bool failed = r < 0 && errno != EINTR && errno != EAGAIN;
        if (failed || (r <= 0 && ++stalls > 2)) {
            one_by_one(iov + at, n - at, done);
            return;
        }
        uint64_t left = r > 0 ? (uint64_t)r : 0;
        done->bytes += left;
        while (at < n && left >= iov[at].iov_len)
            left -= iov[at++].iov_len;
        if (r > 0 && at < n)
            at++; /* the range it stopped in: passed over, the next trim finds it */
    }
}
