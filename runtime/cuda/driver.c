#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/driver.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/core/real_dlsym.h"

struct roundtrim_cuda_entry roundtrim_cuda_entries[ROUNDTRIM_CUDA_ENTRY_COUNT];

static const char *const entry_names[ROUNDTRIM_CUDA_ENTRY_COUNT] = {
#define WRAPPED_NAME(name)             [ID_##name] = #name,
#define CALLED_NAME(name, ret, params) [ID_##name] = #name,
    ROUNDTRIM_CUDA_WRAPPED(WRAPPED_NAME) ROUNDTRIM_CUDA_CALLED(CALLED_NAME)
#undef WRAPPED_NAME
#undef CALLED_NAME
};

const char *roundtrim_cuda_entry_name(enum roundtrim_cuda_entry_id id)
{
    return entry_names[id];
}

/* ---- the driver's object ---- */

/* Handle of the loaded driver library (dlopen with RTLD_NOLOAD, so never a load of our own). */
static _Atomic(void *) driver_handle;
/* A real entry point found after roundtrim: where the driver is, when it has another name. */
static _Atomic(void *) driver_hint;

static void driver_hint_note(void *entry)
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

/* ---- the entries ---- */

void *roundtrim_cuda_entry_resolve(enum roundtrim_cuda_entry_id id, const void *ours)
{
    struct roundtrim_cuda_entry *e = &roundtrim_cuda_entries[id];
    void *p = atomic_load_explicit(&e->found, memory_order_acquire);
    if (p == ROUNDTRIM_CUDA_ABSENT)
        return NULL;
    roundtrim_dlsym_fn rdlsym = roundtrim_real_dlsym();
    if (!rdlsym)
        return NULL;
    bool wrapped = id < ROUNDTRIM_CUDA_WRAPPED_COUNT;
    /* Called from this library, RTLD_NEXT means "after libroundtrim.so": the driver when the
     * program linked it, or another interposer loaded after us. */
    p = wrapped ? rdlsym(RTLD_NEXT, entry_names[id]) : NULL;
    void *h = NULL;
    if (!p || p == ours) {
        h = roundtrim_cuda_driver_handle();
        p = h ? rdlsym(h, entry_names[id]) : NULL;
    }
    if (p == ours)
        p = NULL;
    void *expected = NULL;
    if (!p) {
        /* The loaded driver lacks it for good. A wrapped entry is asked again after roundtrim
         * next time: a later object may define it. */
        if (h && !wrapped)
            atomic_compare_exchange_strong(&e->found, &expected, ROUNDTRIM_CUDA_ABSENT);
        return NULL;
    }
    atomic_compare_exchange_strong(&e->found, &expected, p);
    driver_hint_note(p);
    p = atomic_load_explicit(&e->found, memory_order_acquire);
    return p == ROUNDTRIM_CUDA_ABSENT ? NULL : p;
}

void roundtrim_cuda_entry_answer(enum roundtrim_cuda_entry_id id, void *p)
{
    void *expected = NULL;
    if (p)
        atomic_compare_exchange_strong(&roundtrim_cuda_entries[id].answer, &expected, p);
}
