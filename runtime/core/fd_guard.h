/* No descriptor of roundtrim's reaches a fork child. close-on-exec covers exec (and vfork and
 * posix_spawn children, which run no fork handler but exec soon); a fork without exec copies
 * every descriptor open at that moment, and /proc/self/mem opened by the parent is the parent's
 * memory in the child, readable after the child drops its privileges. So every short-lived
 * descriptor (procfs files, the metrics file's temporary file) is held inside the guard, and
 * fork waits until none is open. */
#ifndef ROUNDTRIM_RUNTIME_CORE_FD_GUARD_H
#define ROUNDTRIM_RUNTIME_CORE_FD_GUARD_H

/* Before opening a descriptor that must not reach a fork child; nests within a thread. A thread
 * inside the guard must not allocate or take a lock another fork handler may hold: fork's
 * prepare handler waits for it, after the handlers registered later than roundtrim's ran. */
void roundtrim_fd_guard_enter(void);

/* Notes fd as open inside the guard (closed in a fork child the guard could not hold off). */
void roundtrim_fd_guard_note(int fd);

/* Closes fd (noted or not; -1 is only not closed) and leaves the guard once; close's result. */
int roundtrim_fd_guard_close(int fd);

/* Leaves the guard once (after a failed open). */
void roundtrim_fd_guard_leave(void);

/* Fork handlers: prepare waits until no thread is inside the guard (a second at most: a read
 * that does not end must not hang the program's fork) and holds new ones off; parent and child
 * let them in again, the child closing what reads left open when the wait gave up. First to
 * take, last to let go among roundtrim's. */
void roundtrim_fd_guard_fork_prepare(void);
void roundtrim_fd_guard_fork_parent(void);
void roundtrim_fd_guard_fork_child(void);

#endif
