/* When the hooks bind. A C audit hook, added before the interpreter starts, sees every module
 * body begin ("exec") and every import ("import"); for the body of a hooked module it puts a
 * weakref on the body's code object, whose callback binds the names (runtime/python/round_hook_bind.h)
 * the moment the body has finished, before the import returns to anyone: a `from module import
 * name` made later gets the proxy too. Modules imported before the main program starts are handled
 * the same way; any event may follow the def of a function of the main program ("__main__:..."),
 * so while one waits every event looks.
 *
 * Python code that roundtrim runs from the hook, the callback or the late start does not enter
 * them again (a flag, under the GIL), and the program's pending exception is put aside meanwhile.
 * When the interpreter finalizes and clears its hooks, this one stops and leaves its list entry to
 * runtime/python/audit_entry.h. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_AUDIT_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_AUDIT_H

#include <stdbool.h>

/* Adds the audit hook, once the table (runtime/python/round_hook_table.h) is filled: before the
 * interpreter starts, or in an interpreter already running (the library was loaded with dlopen)
 * from its main thread through a pending call, which then also binds the names of the modules
 * already imported. When that fails, the hooks stay off with one warning line: always for a
 * running interpreter, only with names_given (names the user gave) for one not started. */
void roundtrim_py_hook_audit_start(bool names_given);

#endif
