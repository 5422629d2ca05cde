#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/driver.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "runtime/core/real_dlsym.h"

/* Handle of the loaded driver library (dlopen with RTLD_NOLOAD, so never a load of our own). */
static _Atomic(void *) driver_handle;
static _Atomic(void *) driver_hint;

void roundtrim_cuda_driver_hint(void *entry)
{
    void *expected = NULL;
    if (entry)
        atomic_compare_exchange_strong(&driver_hint, &expected, entry);
}

void *roundtrim_cuda_driver_handle(void)
{
    void *h = atomic_load_explicit(&driver_handle, memory_order_acquire);
    if (h)
        return h;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) {
        /* The process may have loaded the driver under another name: find it from a pointer. */
        Dl_info info;
        void *p = atomic_load_explicit(&driver_hint, memory_order_acquire);
        if (p && dladdr(p, &info) && info.dli_fname)
            h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (!h)
        return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&driver_handle, &expected, h))
        dlclose(h); /* another thread won: drop our extra reference */
    return atomic_load_explicit(&driver_handle, memory_order_acquire);
}

void *roundtrim_cuda_driver_sym(const char *name)
{
    roundtrim_dlsym_fn rdlsym = roundtrim_real_dlsym();
    void *h = roundtrim_cuda_driver_handle();
    return rdlsym && h ? rdlsym(h, name) : NULL;
}
