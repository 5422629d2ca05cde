/* Round hooks for unmodified Python programs: the round functions of the FL framework a process
 * imports (policy/framework_hooks.h; ROUNDTRIM_PY_HOOK unset or "auto"), and/or the functions
 * ROUNDTRIM_PY_HOOK="module:qualname[,...]" names (policy/hook_spec.h).
 *
 * Every return (normal or by exception) from a hooked function is a round boundary. The function
 * object is left alone; the name that the spec gives (the module's attribute, or the class's
 * attribute for "module:Class.method") is bound to a small C proxy that calls it, then reports
 * the boundary. The proxy forwards every attribute (so inspect sees the same signature, name,
 * code and __wrapped__ chain), binds like a function, pickles by name, adds no Python frame to
 * tracebacks and passes the result or the exception through untouched.
 *
 * When: a C audit hook, added before the interpreter starts, watches each module body run
 * ("exec") and binds the proxy the moment the body of the named module has finished, before
 * the import returns to anyone: `from module import name` made later gets the proxy too.
 * Modules imported before the main program starts are handled the same way.
 *
 * The parts, one job each, all in runtime/python/: hook.c (this start), hook_table.h (the hooks
 * armed and their states), hook_audit.h (when: the audit hook and the end of module bodies),
 * hook_bind.h (where: finding the name and binding the proxy), hook_proxy.h (the proxy type),
 * hook_call.h (what a call means: tests, marks, nesting, the boundary) and hook_record.c (the
 * records below). */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_H

#include <stdbool.h>

struct roundtrim_json;

/* Installs the hooks for a spec (from the constructor; the interpreter may not exist yet):
 * NULL, "" or "auto": the framework table; "none" or "off": nothing; names: only those names;
 * names and "auto": both. Bad entries get one warning line each (policy/hook_spec.h). */
void roundtrim_py_hooks_init(const char *spec);

/* The hooks' lists the start and exit records carry (the keys are their tables'):
 * RT_HOOKS_ARMED the hooks armed (they attach when their module is imported); of the names the
 * user gave and the framework table's rows for a framework the process imported, those that
 * attached, those whose module was never imported, and those whose module was imported without
 * the name (a name of the main program that never appeared is of this kind). */
enum roundtrim_hook_list {
    RT_HOOKS_ARMED,
    RT_HOOKS_ATTACHED,
    RT_HOOKS_NOT_IMPORTED,
    RT_HOOKS_MISSING,
};

/* How hooks are armed (auto, names, auto+names or none), NULL in a process without Python: the
 * start record's hook keys are there when it is not. */
const char *roundtrim_py_hook_mode(void);

/* Whether any hook belongs in the exit record: its hook lists are there when one does. */
bool roundtrim_py_hooks_reported(void);

/* The list as a JSON array under key. Reads no Python state (the exit record is written with the
 * interpreter gone, or the GIL held by another). */
void roundtrim_py_hooks_list_json(struct roundtrim_json *j, const char *key,
                                  enum roundtrim_hook_list which);

/* At the exit of a process that ended no round: one warning line for each name the user gave
 * (ROUNDTRIM_PY_HOOK) that never attached, saying why and what to do instead. Reads no Python
 * state. */
void roundtrim_py_hooks_warn_unattached(void);

/* The framework whose round hooks attached (its row's top-level package: "nvflare", "flwr",
 * "appfl"), preferring one whose hook was called; NULL when none attached. Reads no Python state;
 * a walk of the table's few entries. */
const char *roundtrim_py_hooks_framework(void);

#endif
