/* What a call of a hooked function means for the rounds. Its row's test (policy/framework_hooks.h)
 * is read from the arguments before the call; a mark row that passes leaves its mark; the return,
 * normal or by exception, of the outermost hooked call on a thread is a round boundary
 * ("source":"python", "hook" naming the entry) when the row counts as a round then: a user's name
 * always, a framework row by its role, its framework's server side and its marks.
 *
 * From the proxy's call (runtime/python/round_hook_proxy.h), with the GIL held; the entries are those of
 * runtime/python/round_hook_table.h. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_CALL_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/python/api.h"
#include "runtime/python/round_hook_table.h"

struct roundtrim_py_hook_call {
    struct roundtrim_py_hook *hook; /* NULL: an index outside the table (counts, ends no round) */
    bool passes;                    /* the row's test held (no test: true) */
};

/* Before the call of entry's function with args and kwargs (kwargs may be NULL): runs the row's
 * test, leaves a mark row's mark, counts one hooked call more on this thread. Never raises; the
 * exception state is left as it was. */
void roundtrim_py_hook_call_begin(struct roundtrim_py_hook_call *call, size_t entry,
                                  py_object *args, py_object *kwargs);

/* After the call, whatever it returned: notes the entry called and ends a round when the call
 * was the thread's outermost hooked one and counts. Plain C, no Python API: the exception of a
 * failed call stays set and untouched. */
void roundtrim_py_hook_call_end(const struct roundtrim_py_hook_call *call);

#endif
