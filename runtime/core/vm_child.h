/* Children that share the parent's memory until they exec: vfork, posix_spawn and
 * clone(CLONE_VM). Every global they write is the parent's, so roundtrim's hooks must touch
 * nothing of its own there and only forward. */
#ifndef ROUNDTRIM_RUNTIME_CORE_VM_CHILD_H
#define ROUNDTRIM_RUNTIME_CORE_VM_CHILD_H

#include <stdbool.h>

/* True in a process that runs in memory roundtrim set up for another process: its pid is not the
 * one recorded at start or by the last fork's child handler (no fork handler runs for vfork or
 * clone). One getpid() system call: not for the malloc fast path. Async-signal-safe. */
bool roundtrim_in_vm_child(void);

/* Records this process's pid and registers the fork handler that records a child's: first in
 * the constructor, so that in a fork child this handler runs before every other of roundtrim's. */
void roundtrim_vm_child_start(void);

#endif
