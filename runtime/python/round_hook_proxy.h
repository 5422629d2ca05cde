/* The object bound in place of a hooked function: a small C type ("roundtrim.hook", made from a
 * spec at the first use, so that it fits the running interpreter's object header). Its call runs
 * the function between roundtrim_py_hook_call_begin and _end (runtime/python/round_hook_call.h), adds no
 * Python frame to tracebacks and passes the result or the exception through untouched. It
 * forwards every other attribute, __class__ included (so inspect sees the same signature, name,
 * code and __wrapped__ chain, and isinstance(proxy, types.FunctionType) holds), compares, hashes
 * and prints as the function, binds to instances like a function when it wraps one, and pickles
 * by name (pickle finds the proxy again under the function's module and qualified name).
 *
 * With the GIL held. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_PROXY_H
#define ROUNDTRIM_RUNTIME_PYTHON_ROUND_HOOK_PROXY_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/python/api.h"

/* A new proxy (a new reference) calling target (which it holds a reference to) for the table's
 * entry `entry`; binds: target is a Python function, and binds to an instance as a method. NULL
 * when the type or the object cannot be made (an exception may be set). */
py_object *roundtrim_py_hook_proxy_new(py_object *target, bool binds, size_t entry);

/* Whether o is a proxy (false before the first one was made). */
bool roundtrim_py_hook_is_proxy(py_object *o);

#endif
