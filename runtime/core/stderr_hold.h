/* Where roundtrim writes what is meant for the program's stderr (warnings, ROUNDTRIM_LOG=stderr).
 *
 * Many programs close their stderr as they exit: coreutils close it in an atexit handler, to
 * report a failed final write. roundtrim writes its last records after that (its own atexit
 * handler runs after the program's), so when exit begins on the main thread, before any atexit
 * handler runs, it takes a copy of fd 2 and writes there from then on. The copy is taken only
 * then: a program that closes its stderr while it runs (a daemon detaching from its starter's
 * pipe) is not kept attached to it by roundtrim. */
#ifndef ROUNDTRIM_RUNTIME_CORE_STDERR_HOLD_H
#define ROUNDTRIM_RUNTIME_CORE_STDERR_HOLD_H

/* From the constructor, on the main thread: asks to be told when exit() begins there. */
void roundtrim_stderr_hold_start(void);

/* The descriptor to write stderr's lines to: the copy taken at exit, or 2. */
int roundtrim_stderr_fd(void);

/* The fork child is not exiting (a fork from an atexit handler): it lets the copy go. */
void roundtrim_stderr_fork_child(void);

#endif
