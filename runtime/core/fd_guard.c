#include "runtime/core/fd_guard.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

/* Holders read-lock, fork write-locks. Writers first: a steady stream of rounds must not keep a
 * fork waiting; a thread re-enters through its depth, never through the lock (a waiting writer
 * would block a second read lock). */
static pthread_rwlock_t guard = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static __thread unsigned depth;
/* Whether this fork's prepare handler holds the lock: not when the forking thread is itself
 * inside the guard (fork from a signal handler that interrupted a read of ours). */
static bool fork_holds;

/* The descriptors open inside the guard, for that last case: the child makes them /dev/null. */
#define NOTED_MAX 16
static int noted[NOTED_MAX] = {[0 ... NOTED_MAX - 1] = -1};

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
    for (int i = 0; i < NOTED_MAX; i++) {
        int expected = -1;
        if (__atomic_compare_exchange_n(&noted[i], &expected, fd, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return;
    }
}

int roundtrim_fd_guard_close(int fd)
{
    int rc = 0;
    if (fd >= 0) {
        for (int i = 0; i < NOTED_MAX; i++) {
            int expected = fd;
            if (__atomic_compare_exchange_n(&noted[i], &expected, -1, false, __ATOMIC_SEQ_CST,
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
    fork_holds = depth == 0;
    if (fork_holds)
        pthread_rwlock_wrlock(&guard);
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
    /* The fork came from inside the guard (a signal handler that interrupted a read of ours
     * forked): what the threads had open is in this child. Each becomes /dev/null, so that the
     * interrupted read ends and later closes a number that is still its own; the lock is held
     * again by this thread, now the only one, as deep as it was. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int i = 0; i < NOTED_MAX && null >= 0; i++)
        if (noted[i] >= 0 && noted[i] != null)
            dup3(null, noted[i], O_CLOEXEC);
    if (null >= 0)
        close(null);
    pthread_rwlock_rdlock(&guard);
}
