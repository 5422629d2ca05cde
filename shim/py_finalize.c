/* Py_FinalizeEx and Py_Finalize as an embedder calls them (a plugin host, a test runner that
 * starts and ends interpreters again and again). Before the interpreter finalizes, no Python job
 * of roundtrim's may be waiting for the GIL: one still waiting when finalization begins is ended
 * by CPython, or wakes in the next interpreter holding a thread state of the old one, and CPython
 * aborts the process when it gives it back. After it, the next interpreter gets the jobs again.
 * An embedder that opens libpython with dlopen and looks them up with dlsym gets the wrappers too
 * (shim/dlsym_hook.c). CPython's own executable calls them inside itself, unseen here: its
 * interpreter finalizes once, at exit, covered by the exit barrier registered with threading's
 * or atexit's callbacks before its first job (runtime/python/gil.c). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/core/settings.h"
#include "runtime/python/bridge.h"
#include "shim/py_finalize.h"

typedef int (*finalize_ex_fn)(void);
typedef void (*finalize_fn)(void);

ROUNDTRIM_EXPORT int Py_FinalizeEx(void);
ROUNDTRIM_EXPORT void Py_Finalize(void);

/* Set while this thread finalizes through us: a libpython whose Py_Finalize calls Py_FinalizeEx
 * through its PLT comes back here, and goes straight on. */
static __thread int inside;

/* The definition the caller would have bound to without roundtrim: the next one in the global
 * scope; else, for a library that links a libpython opened RTLD_LOCAL, the one in that library's
 * own scope (which holds no preloaded library). */
static void *real_of(const char *name, const void *caller, const void *ours)
{
    void *p = roundtrim_next_symbol(name);
    Dl_info info;
    roundtrim_dlsym_fn lookup = roundtrim_real_dlsym();
    if (p || !lookup || !dladdr(caller, &info) || !info.dli_fname)
        return p == ours ? NULL : p;
    roundtrim_dlerror_note();
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    p = h ? lookup(h, name) : NULL;
    if (h)
        dlclose(h);
    roundtrim_dlerror_forget();
    return p == ours ? NULL : p;
}

/* Entering a finalization: roundtrim acts around the outermost one, where it is active. */
static bool enter(void)
{
    bool wrap = inside++ == 0 && roundtrim_active();
    if (wrap)
        roundtrim_python_finalize_begin();
    return wrap;
}

static void leave(bool wrap)
{
    if (wrap)
        roundtrim_python_finalize_end();
    inside--;
}

int Py_FinalizeEx(void)
{
    finalize_ex_fn real = (finalize_ex_fn)real_of("Py_FinalizeEx", __builtin_return_address(0),
                                                  (void *)Py_FinalizeEx);
    bool wrap = enter();
    int rc = real ? real() : -1;
    leave(wrap);
    return rc;
}

void Py_Finalize(void)
{
    finalize_fn real =
        (finalize_fn)real_of("Py_Finalize", __builtin_return_address(0), (void *)Py_Finalize);
    bool wrap = enter();
    if (real)
        real();
    leave(wrap);
}

void *roundtrim_py_finalize_dlsym_substitute(void *handle, const char *name)
{
    roundtrim_dlsym_fn lookup = roundtrim_real_dlsym();
    bool ex = strcmp(name, "Py_FinalizeEx") == 0;
    if (!lookup || (!ex && strcmp(name, "Py_Finalize") != 0))
        return NULL;
    /* Only a libpython of the global scope (opened RTLD_GLOBAL), the one roundtrim's jobs run
     * in: the wrapper forwards to that one. */
    void *next = roundtrim_next_symbol(name);
    if (!next || lookup(handle, name) != next)
        return NULL;
    return ex ? (void *)Py_FinalizeEx : (void *)Py_Finalize;
}
