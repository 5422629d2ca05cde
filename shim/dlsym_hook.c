/* The decision half of the dlsym interposition; the exported dlsym itself is the trampoline in
 * shim/dlsym_trampoline.S.
 *
 * Why a trampoline: glibc resolves RTLD_NEXT (and the scope of RTLD_DEFAULT) from the return
 * address of the dlsym call. A C wrapper that calls the real dlsym would make every such lookup
 * relative to libroundtrim.so, and programs would find the wrong "next" symbol. The trampoline
 * asks roundtrim_dlsym_decide() whether to substitute, and otherwise jumps to the real dlsym with
 * the caller's own return address still on the stack.
 *
 * Architectures: x86-64 and aarch64 have the trampoline. Elsewhere a C function cannot forward
 * without changing the caller, so dlsym is not interposed there at all: programs linked with
 * -lcuda are still counted, programs that dlopen the driver are not. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include <string.h>

#include "shim/cuda_driver.h"
#include "shim/trim_hook.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* Read by the trampoline (8-byte aligned pointer: a plain load is atomic on both targets). */
__attribute__((visibility("hidden"))) dlsym_fn roundtrim_dlsym_real;

/* Set while this thread resolves the real dlsym: dlvsym may allocate, the malloc bootstrap may
 * then call dlsym again, and that nested call must not resolve again (it gets NULL). */
static __thread int resolving;

static dlsym_fn resolve_real_dlsym(void)
{
    dlsym_fn fn = __atomic_load_n(&roundtrim_dlsym_real, __ATOMIC_ACQUIRE);
    if (fn || resolving)
        return fn;
    resolving = 1;
    /* glibc 2.34 moved dlsym into libc with a new version; older ones only have GLIBC_2.2.5
     * (GLIBC_2.17 on aarch64). __libc_dlsym is gone since 2.34. */
    fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__aarch64__)
    if (!fn)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#else
    if (!fn)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#endif
    if (fn)
        __atomic_store_n(&roundtrim_dlsym_real, fn, __ATOMIC_RELEASE);
    resolving = 0;
    return fn;
}

dlsym_fn roundtrim_real_dlsym(void)
{
    return resolve_real_dlsym();
}

/* Only the driver's naming scheme: cudnnCreate, cublas*, curl_* have a lower-case third letter. */
static int is_driver_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* Called by the trampoline with the caller's arguments and its return address. Returns the value
 * dlsym should return, or NULL to forward the call untouched to the real dlsym. */
__attribute__((visibility("hidden"))) void *roundtrim_dlsym_decide(void *handle, const char *name,
                                                                   const void *caller);

/* Set while this thread decides: a dlsym reached from inside the decision (a loader, a driver
 * stub's constructor, another interposer) is forwarded untouched instead of deciding again. */
static __thread int deciding;

void *roundtrim_dlsym_decide(void *handle, const char *name, const void *caller)
{
    /* First of all: the trampoline forwards to what this resolves. */
    if (!resolve_real_dlsym())
        return NULL;
    /* RTLD_DEFAULT finds our exported wrappers by itself (we are preloaded); RTLD_NEXT is an
     * interposer asking for the next one: both depend on the caller, so never touch them. */
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name || deciding)
        return NULL;
    /* ctypes.CDLL("libc.so.6").malloc_trim: the program's own trim, counted. */
    if (name[0] == 'm' && strcmp(name, "malloc_trim") == 0)
        return roundtrim_trim_dlsym_substitute(handle);
    if (!is_driver_name(name))
        return NULL;
    deciding = 1;
    void *p = roundtrim_cuda_dlsym_substitute(handle, name, caller);
    deciding = 0;
    return p;
}
