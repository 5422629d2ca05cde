/* Which operator new each calling library reaches (runtime/alloc/cxx_runtime.h), remembered by
 * the library's address range so that operator new asks the loader once per library.
 *
 * The common case costs what one shared answer did: when the global scope as loaded at the start
 * defines operator new after roundtrim (libstdc++ linked with the program, a preloaded
 * allocator), every library binds to it whatever is loaded later, and roundtrim_cxx_everyone
 * holds it. Otherwise (a C or Python program whose C++ libraries come by dlopen) the caller's
 * return address picks its record: the thread's last one, else a scan of the few libraries that
 * called. A record holds while no library was unloaded since it was checked (another library may
 * then be mapped at its place; runtime/core/unloads.h); a record made stale is checked again on
 * the next call from its range. A record also keeps the loader reference taken for its library
 * (an allocator reached through the global scope), given back after the dlclose that unloads the
 * library. Code outside every object (a JIT's) shares one answer, the first runtime found. */
#ifndef ROUNDTRIM_RUNTIME_ALLOC_CXX_CALLERS_H
#define ROUNDTRIM_RUNTIME_ALLOC_CXX_CALLERS_H

#include <stddef.h>

#include "runtime/alloc/cxx_runtime.h"
#include "runtime/core/unloads.h"

/* One calling library's record. */
struct roundtrim_cxx_caller {
    uintptr_t start, span; /* the library's mapping */
    uint64_t unloads;      /* roundtrim_unloads when its binding was last checked */
    const struct roundtrim_cxx_binding *binding;
    void *held; /* the loader reference kept for it (runtime/alloc/cxx_runtime.h), or NULL */
};

extern const struct roundtrim_cxx_binding *roundtrim_cxx_everyone
    __attribute__((visibility("hidden")));
/* The record this thread used last. */
extern __thread const struct roundtrim_cxx_caller *roundtrim_cxx_last
    __attribute__((visibility("hidden")));

/* The binding for a call returning to caller: never NULL (all its operators NULL while no C++
 * runtime is loaded). names are operator new's and the rest, the same at every call. */
const struct roundtrim_cxx_binding *
roundtrim_cxx_binding_of_caller(const void *caller, const char *const names[], int count);

/* Gives back the loader references taken for libraries that are no longer loaded: after each
 * dlclose. */
void roundtrim_cxx_callers_release_unloaded(void);

/* In a forked child, before anything else runs there. */
void roundtrim_cxx_callers_fork_child(void);

static inline const struct roundtrim_cxx_binding *
roundtrim_cxx_binding_for(const void *caller, const char *const names[], int count)
{
    const struct roundtrim_cxx_binding *b =
        __atomic_load_n(&roundtrim_cxx_everyone, __ATOMIC_ACQUIRE);
    if (__builtin_expect(b != NULL, 1))
        return b;
    const struct roundtrim_cxx_caller *c = roundtrim_cxx_last;
    if (c && (uintptr_t)caller - c->start < c->span &&
        __atomic_load_n(&c->unloads, __ATOMIC_RELAXED) ==
            __atomic_load_n(&roundtrim_unloads, __ATOMIC_ACQUIRE))
        return c->binding;
    return roundtrim_cxx_binding_of_caller(caller, names, count);
}

#endif
