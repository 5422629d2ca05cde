/* dlclose, counted around (runtime/core/unloads.h): operator new's memory of which runtime each
 * library's calls go to holds only while no library was unloaded since. After it, the loader
 * references operator new took for libraries now gone are given back (runtime/alloc/
 * cxx_callers.h), as the loader drops a library's dependencies with it. Nothing else changes:
 * the loader's own dlclose does the work and its answer is returned (errno as it left it). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "runtime/alloc/cxx_callers.h"
#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/core/unloads.h"

typedef int (*dlclose_fn)(void *);

static dlclose_fn next_dlclose;

ROUNDTRIM_EXPORT int dlclose(void *handle)
{
    dlclose_fn fn = __atomic_load_n(&next_dlclose, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (dlclose_fn)roundtrim_next_symbol("dlclose");
        if (!fn)
            return -1; /* no C library defines it: nothing could have been opened */
        __atomic_store_n(&next_dlclose, fn, __ATOMIC_RELEASE);
    }
    roundtrim_unload_begin();
    int rc = fn(handle);
    roundtrim_unload_end();
    if (rc == 0) { /* a failed close's message stays for the program's dlerror */
        int saved = errno;
        roundtrim_cxx_callers_release_unloaded();
        errno = saved;
    }
    return rc;
}
