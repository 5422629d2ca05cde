#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/driver.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/core/real_dlsym.h"

struct roundtrim_cuda_entry roundtrim_cuda_entries[ROUNDTRIM_CUDA_ENTRY_COUNT];

/* Names held in the table, not pointed at: a table of pointers costs every process's start a
 * relocation per row, CUDA or not. */
static const char entry_names[ROUNDTRIM_CUDA_ENTRY_COUNT][40] = {
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
static void *driver_handle;
/* A real entry point found after roundtrim: where the driver is, when it has another name. */
static void *driver_hint;

static void driver_hint_note(void *entry)
{
    void *expected = NULL;
    if (entry)
        __atomic_compare_exchange_n(&driver_hint, &expected, entry, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
}

void *roundtrim_cuda_driver_handle(void)
{
    void *h = __atomic_load_n(&driver_handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) {
        /* The process may have loaded the driver under another name: find it from a pointer. */
        Dl_info info;
        void *p = __atomic_load_n(&driver_hint, __ATOMIC_ACQUIRE);
        if (p && dladdr(p, &info) && info.dli_fname)
            h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (!h)
        return NULL;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&driver_handle, &expected, h, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        dlclose(h); /* another thread won: drop our extra reference */
    return __atomic_load_n(&driver_handle, __ATOMIC_ACQUIRE);
}

/* ---- the entries ---- */

void *roundtrim_cuda_entry_resolve(enum roundtrim_cuda_entry_id id, const void *ours)
{
    struct roundtrim_cuda_entry *e = &roundtrim_cuda_entries[id];
    void *p = __atomic_load_n(&e->found, __ATOMIC_ACQUIRE);
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
            __atomic_compare_exchange_n(&e->found, &expected, ROUNDTRIM_CUDA_ABSENT, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return NULL;
    }
    __atomic_compare_exchange_n(&e->found, &expected, p, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    driver_hint_note(p);
    p = __atomic_load_n(&e->found, __ATOMIC_ACQUIRE);
    return p == ROUNDTRIM_CUDA_ABSENT ? NULL : p;
}

void roundtrim_cuda_entry_answer(enum roundtrim_cuda_entry_id id, void *p)
{
    void *expected = NULL;
    if (p)
        __atomic_compare_exchange_n(&roundtrim_cuda_entries[id].answer, &expected, p, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
