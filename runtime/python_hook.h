/* Round hooks for unmodified Python programs: ROUNDTRIM_PY_HOOK="module:qualname[,...]".
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
 * Modules imported before the main program starts are handled the same way. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_HOOK_H
#define ROUNDTRIM_RUNTIME_PYTHON_HOOK_H

#include <stdbool.h>
#include <stddef.h>

#define ROUNDTRIM_PY_HOOK_MAX 16

/* One parsed spec entry. */
struct roundtrim_py_hook_entry {
    char module[128];
    char qualname[128];
};

/* Parses a spec into at most max entries. Bad entries are skipped, each with one warning line
 * naming ROUNDTRIM_PY_HOOK and the entry (warn may be NULL). Returns the number kept. Pure. */
size_t roundtrim_py_hook_parse(const char *spec, struct roundtrim_py_hook_entry *out, size_t max,
                               void (*warn)(const char *line));

/* Installs the hooks for a spec (from the constructor; the interpreter may not exist yet). */
void roundtrim_py_hooks_init(const char *spec);

#endif
