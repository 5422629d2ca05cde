/* An object's own lookup scope, as the loader builds it for an object opened with dlopen: the
 * object itself, then its DT_NEEDED dependencies breadth first, each once. A library opened with
 * RTLD_LOCAL binds what the global scope lacks (operator new from its private libstdc++ or
 * libc++abi) in that scope, so finding which definition it would use bare means walking it. */
#ifndef ROUNDTRIM_RUNTIME_CORE_LOCAL_SCOPE_H
#define ROUNDTRIM_RUNTIME_CORE_LOCAL_SCOPE_H

#include <link.h>
#include <stdbool.h>

#include "runtime/core/loader_tables.h"

/* Enough for any real library's direct and indirect dependencies; a longer scope is cut here,
 * which at worst leaves a name to the caller's fallback. */
#define ROUNDTRIM_SCOPE_MAX 48

struct roundtrim_scope {
    struct dl_phdr_info objects[ROUNDTRIM_SCOPE_MAX]; /* in the loader's search order */
    unsigned count;
};

/* The scope of the object that maps addr. Call it while that object cannot go away (from code
 * running in it): its dependencies stay loaded as long as it does. False when no object maps
 * addr. */
bool roundtrim_local_scope_of(const void *addr, struct roundtrim_scope *out);

/* Whether the object info describes is in the scope. */
bool roundtrim_local_scope_has(const struct roundtrim_scope *scope,
                               const struct dl_phdr_info *info);

/* Leaves out the object that maps addr (roundtrim itself, for a library linked with it: its own
 * definitions are the ones that must not be found). */
void roundtrim_local_scope_drop(struct roundtrim_scope *scope, const void *addr);

/* The first definition of name in the scope, each object's own table read in order. */
bool roundtrim_local_scope_find(const struct roundtrim_scope *scope, const char *name,
                                struct roundtrim_symbol *out);

#endif
