#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shim/trim_hook.h"

#include <dlfcn.h>
#include <stddef.h>

#include "runtime/alloc/allocator_ops.h"
#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"

typedef int (*malloc_trim_fn)(size_t);

static malloc_trim_fn next_trim;

/* Not on any allocation path: a lazy lookup is safe here. RTLD_NEXT from this library is the
 * allocator after us, or glibc. */
static malloc_trim_fn next(void)
{
    malloc_trim_fn fn = __atomic_load_n(&next_trim, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (malloc_trim_fn)roundtrim_next_symbol("malloc_trim");
        __atomic_store_n(&next_trim, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

ROUNDTRIM_EXPORT int malloc_trim(size_t pad)
{
    roundtrim_program_trim_note();
    malloc_trim_fn fn = next();
    return fn ? fn(pad) : 0;
}

/* Our hook's own address, bound when the library is linked: taken by the exported name it would
 * be a symbol the loader looks up at every process start. */
extern __typeof__(malloc_trim) own_malloc_trim
    __attribute__((alias("malloc_trim"), visibility("hidden")));

void *roundtrim_trim_dlsym_substitute(void *handle)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    malloc_trim_fn fn = next();
    if (!rdlsym || !fn)
        return NULL;
    return rdlsym(handle, "malloc_trim") == (void *)fn ? (void *)own_malloc_trim : NULL;
}
