/* The round hooks armed in this process, one entry each: the names the user gave first, then the
 * framework table's rows (policy/framework_hooks.h) not already named, each with the state of its
 * binding.
 *
 * Filled once by roundtrim_py_hooks_init (runtime/python/round_hook.c) before the audit hook exists;
 * from then on the entries' fields and the counters are changed only with the GIL held (the audit
 * hook and its weakref callbacks, hook_bind.h; the proxies' calls, hook_call.h), and the records
 * (hook_record.c) read them without it. Entries never move or leave: an entry's index is how a
 * proxy names it. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_TABLE_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/framework_hooks.h"
#include "policy/hook_spec.h"
#include "runtime/python/api.h"

/* Framework rows the table holds besides the user's names. */
#define ROUNDTRIM_PY_HOOK_FW_ROWS 32

/* PENDING: not bound yet; ATTACHED: the proxy is bound; DROPPED: named something that is not
 * there (or not a function); NOT_THIS_VERSION: a framework row for other versions of the
 * framework the process imported. Only PENDING changes, once. */
enum roundtrim_py_hook_state {
    RT_HOOK_PENDING,
    RT_HOOK_ATTACHED,
    RT_HOOK_DROPPED,
    RT_HOOK_NOT_THIS_VERSION
};

struct roundtrim_py_hook {
    struct roundtrim_hook_name name;
    char target[ROUNDTRIM_HOOK_TARGET_MAX]; /* "module:qualname", for records and warnings */
    const struct roundtrim_fw_hook *fw; /* the framework row, or NULL for a name the user gave */
    bool in_main; /* "__main__:...": the main program's own namespace, never "finished" */
    bool fw_seen; /* the framework's top-level package was imported */
    bool called;  /* the hooked function was called at least once (under the GIL) */
    bool marked;  /* a mark row: called, its test held, since the last round that took it */
    enum roundtrim_py_hook_state state;
    bool armed;         /* a weakref on the running module body waits for it to end */
    py_object *weakref; /* kept: dropping it from inside its own callback is not safe */
};

struct roundtrim_py_hook_table {
    struct roundtrim_py_hook entry[ROUNDTRIM_HOOK_SPEC_MAX + ROUNDTRIM_PY_HOOK_FW_ROWS];
    size_t count;
    unsigned pending;      /* entries still PENDING */
    unsigned main_pending; /* of those, names in the main program ("__main__:...") */
    /* The start record's "py_hook_mode" (policy/hook_spec.h): set when the hooks are off or
     * entries were armed; NULL: the start record says nothing about hooks. */
    const char *mode;
};

extern struct roundtrim_py_hook_table roundtrim_py_hook_table;

/* Arms an entry (PENDING) for module:qualname; fw: its framework row, NULL for a name the user
 * gave. False when the table is full. Before the audit hook exists only. */
bool roundtrim_py_hook_add(const char *module, const char *qualname,
                           const struct roundtrim_fw_hook *fw);

/* Arms the framework table's rows, but those the user named already. */
void roundtrim_py_hook_add_framework_rows(void);

#endif
