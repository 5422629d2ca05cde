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
#include <stddef.h>

#include <string.h>

#include "runtime/core/real_dlsym.h"
#include "shim/cuda_hooks.h"
#include "shim/py_finalize.h"
#include "shim/trim_hook.h"

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
    if (!roundtrim_real_dlsym())
        return NULL;
    /* RTLD_DEFAULT finds our exported wrappers by itself (we are preloaded); RTLD_NEXT is an
     * interposer asking for the next one: both depend on the caller, so never touch them. */
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name || deciding)
        return NULL;
    /* ctypes.CDLL("libc.so.6").malloc_trim: the program's own trim, counted. */
    if (name[0] == 'm' && strcmp(name, "malloc_trim") == 0)
        return roundtrim_trim_dlsym_substitute(handle);
    /* An embedder's dlsym(libpython, "Py_FinalizeEx"): the wrapper that keeps roundtrim's Python
     * jobs out of the finalization. */
    if (name[0] == 'P' && strncmp(name, "Py_Finalize", 11) == 0)
        return roundtrim_py_finalize_dlsym_substitute(handle, name);
    if (!is_driver_name(name))
        return NULL;
    deciding = 1;
    void *p = roundtrim_cuda_dlsym_substitute(handle, name, caller);
    deciding = 0;
    return p;
}
