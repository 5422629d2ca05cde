/* The audit hook roundtrim adds before the interpreter starts, and the rule that comes with it.
 *
 * Before Py_PreInitialize, PySys_AddAuditHook takes its list entry from the default raw
 * allocator (malloc). At finalization CPython frees every entry with PyMem_RawFree, which under
 * -X dev, PYTHONDEVMODE or PYTHONMALLOC=*debug is the debug allocator: it finds no debug header
 * on roundtrim's entry and aborts the process (3.8 to 3.13 alike). Memory handed to the
 * interpreter before it starts must be freed by the allocator that made it, or not at all: so
 * roundtrim's entry is taken out of the runtime's list when the interpreter announces that it
 * clears its hooks, and is never freed. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_AUDIT_ENTRY_H
#define ROUNDTRIM_RUNTIME_PYTHON_AUDIT_ENTRY_H

#include <stdbool.h>

#include "runtime/python/api.h"

/* Calls add(hook, user) (PySys_AddAuditHook, before the interpreter starts) and finds where the
 * runtime keeps the new entry (the one word of _PyRuntime the add changed from NULL to it).
 * Returns add's result. */
int roundtrim_py_audit_add_early(int (*add)(py_audit_hook, void *), py_audit_hook hook);

/* From the hook, on "cpython._PySys_ClearAuditHooks": unlinks roundtrim's entry, which then
 * lives until the process ends. A no-op when the entry was not found. */
void roundtrim_py_audit_unlink_early(void);

/* Whether the entry was found (and so will be unlinked before finalization frees it). */
bool roundtrim_py_audit_early_known(void);

#endif
