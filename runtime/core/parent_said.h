/* Whether this process's parent already gave the settings' warnings where this one would give
 * them. A misspelled variable set for a job reaches every process of it (a shell script's
 * subshells, a pyenv shim's chain, a launcher's workers), and one line per process buries the
 * one that matters: a process whose parent ran roundtrim, started with the same settings
 * variables (what the warnings are made of) and writes stderr to the same file, says nothing,
 * because its parent said the same to the same reader.
 *
 * Read from /proc/PPID (environ, maps, fd/2), which only a process allowed to trace the parent
 * can read: anything unreadable or different answers false, and the process warns. The files
 * are read only when there is something to say. A program a process runs in its place (exec)
 * has the same parent as the one before it and warns again. */
#ifndef ROUNDTRIM_RUNTIME_CORE_PARENT_SAID_H
#define ROUNDTRIM_RUNTIME_CORE_PARENT_SAID_H

#include <stdbool.h>

bool roundtrim_parent_said_it(void);

#endif
