#include "runtime/core/fd_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Holders read-lock, fork write-locks. Writers first: a steady stream of rounds must not keep a
 * fork waiting; a thread re-enters through its depth, never through the lock (a waiting writer
 * would block a second read lock). */
static pthread_rwlock_t guard = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static __thread unsigned depth;
/* Whether this fork's prepare handler holds the lock. Not when the forking thread is itself
 * inside the guard (a signal handler that interrupted a read of ours forked), nor when a read
 * did not end in time (a file that never answers): fork then goes on, and the child deals with
 * the descriptors noted below. The thread's own: a fork's handlers all run in the thread that
 * forks, and glibc lets go of its atfork lock around them, so two threads forking at once run
 * theirs interleaved (one thread's answer must not end another's hold). */
static __thread bool fork_holds;
/* How long a fork waits for the reads in progress: they take milliseconds. */
#define FORK_WAIT_S 1

/* The descriptors open inside the guard, each with its thread's tag in the high half (0: a free
 * slot), for the child of a fork that did not hold the lock. */
#define NOTED_MAX 16
static uint64_t noted[NOTED_MAX];
static uint32_t tags;
static __thread uint32_t my_tag;

static uint32_t thread_tag(void)
{
    if (my_tag == 0)
        my_tag = __atomic_add_fetch(&tags, 1, __ATOMIC_RELAXED) | 1u << 31; /* never 0 */
    return my_tag;
}

void roundtrim_fd_guard_enter(void)
{
    if (depth++ == 0)
        pthread_rwlock_rdlock(&guard);
}

void roundtrim_fd_guard_leave(void)
{
    if (depth > 0 && --depth == 0)
        pthread_rwlock_unlock(&guard);
}

void roundtrim_fd_guard_note(int fd)
{
    uint64_t entry = (uint64_t)thread_tag() << 32 | (uint32_t)fd;
    for (int i = 0; i < NOTED_MAX; i++) {
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n(&noted[i], &expected, entry, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return;
    }
}

int roundtrim_fd_guard_close(int fd)
{
    int rc = 0;
    if (fd >= 0) {
        uint64_t entry = (uint64_t)thread_tag() << 32 | (uint32_t)fd;
        for (int i = 0; i < NOTED_MAX; i++) {
            uint64_t expected = entry;
            if (__atomic_compare_exchange_n(&noted[i], &expected, 0, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
                break;
        }
        rc = close(fd);
    }
    roundtrim_fd_guard_leave();
    return rc;
}

void roundtrim_fd_guard_fork_prepare(void)
{
    fork_holds = false;
    if (depth > 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += FORK_WAIT_S;
    int rc;
    while ((rc = pthread_rwlock_timedwrlock(&guard, &until)) == EINTR)
        ;
    fork_holds = rc == 0;
}

void roundtrim_fd_guard_fork_parent(void)
{
    if (fork_holds)
        pthread_rwlock_unlock(&guard);
}

void roundtrim_fd_guard_fork_child(void)
{
    /* The lock starts afresh: unlocking it here would not do, the write lock is recorded as the
     * parent's thread's, whose id differs from this one's. */
    guard = (pthread_rwlock_t)PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    if (fork_holds)
        return;
    /* Reads were in progress: their descriptors are in this child. Those of the threads that
     * are gone are closed; this thread's own (it forked from a signal handler inside a read)
     * become /dev/null, so that the interrupted read ends and later closes a number that is
     * still its own; the lock is held again by this thread, now the only one. */
    int null = depth > 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    for (int i = 0; i < NOTED_MAX; i++) {
        if (noted[i] == 0)
            continue;
        int fd = (int)(uint32_t)noted[i];
        if ((uint32_t)(noted[i] >> 32) == my_tag && my_tag != 0) {
            if (null >= 0 && fd != null)
                dup3(null, fd, O_CLOEXEC);
        } else {
            close(fd);
            noted[i] = 0;
        }
    }
    if (null >= 0)
        close(null);
    if (depth > 0)
        pthread_rwlock_rdlock(&guard);
}
