/* Finding a hooked name and binding its proxy there. The module is the one sys.modules holds; a
 * framework row waits for its framework's top-level package and leaves when that package's
 * __version__ is not one of the row's; "Class.method" is resolved along the class's MRO, reading
 * namespaces only (no descriptor, no module __getattr__, nothing that may import); the proxy
 * (runtime/python/round_hook_proxy.h) is bound under the attribute's own name, inside a staticmethod or
 * classmethod when the function was in one. Then the entry settles (runtime/python/round_hook_table.h):
 * ATTACHED, DROPPED (a name the user gave gets one warning line) or NOT_THIS_VERSION.
 *
 * When to try is runtime/python/round_hook_audit.h's business; everything here runs with the GIL held
 * from there, and may leave a Python exception set for the caller to clear. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_BIND_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_BIND_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/python/api.h"
#include "runtime/python/round_hook_table.h"

/* One event's look at the frameworks: sys.modules read once, and each framework found absent
 * is not looked up again for its other rows. */
struct roundtrim_py_fw_look {
    py_object *modules;
    const char *absent[16];
    size_t n_absent;
};

void roundtrim_py_fw_look_begin(struct roundtrim_py_fw_look *look);

/* Whether the entry's framework (if it has one) has been imported; remembered in the entry once
 * it has. */
bool roundtrim_py_fw_present(struct roundtrim_py_fw_look *look, struct roundtrim_py_hook *e);

/* The module as sys.modules holds it now (borrowed), or NULL. Reads only. */
py_object *roundtrim_py_loaded_module(const char *name);

/* Binds the entry's proxy if its module is there and done. body_done: the module's body is known
 * to have finished (its code object just died); otherwise a module still initializing is left
 * for later (the main program's never finishes: its names are tried at once). A name not there
 * yet in the main program stays PENDING; an entry ATTACHED already is bound again (a reload). */
void roundtrim_py_hook_try_attach(struct roundtrim_py_fw_look *look, struct roundtrim_py_hook *e,
                                  bool body_done);

/* roundtrim_py_hook_try_attach for every PENDING entry (mains_only: those of the main program). */
void roundtrim_py_hook_attach_ready(bool mains_only);

#endif
