/* How programs reach the CUDA driver wrappers (shim/cuda_hooks.c), and what each wrapper forwards
 * to. Programs reach the driver three ways, and all three end at the wrappers:
 *  - linked with -lcuda: the dynamic linker binds their calls to the wrappers' exports (we are
 *    preloaded);
 *  - dlopen("libcuda.so.1") + dlsym: the dlsym hook (shim/dlsym_hook.c) hands out the wrappers
 *    (roundtrim_cuda_dlsym_substitute below);
 *  - cuGetProcAddress*: the wrappers below take the driver's answer for the requested name,
 *    version and flags, decide which exact variant (ABI) that request selects (the PFN_* versions
 *    of cudaTypedefs.h: cuMemAlloc at >= 3020 is cuMemAlloc_v2, the per-thread-stream flag
 *    selects _ptsz...), keep the driver's pointer as that wrapper's real function and hand out
 *    the wrapper. A pointer equal to one of the driver's exports names its variant by itself:
 *    that match is the fallback, and wins when the two disagree.
 *
 * The real function of a wrapper is stored once per wrapper, as the answer in its entry of the
 * table (runtime/cuda/driver.h): the first answer a lookup gave for that exact variant
 * (cuGetProcAddress, or dlsym on the driver's handle). A variant is one ABI and one stream
 * semantics, so a driver that hands out another address for it later (an internal address next
 * to the export) hands out the same implementation, and keeping the first means one
 * implementation per wrapper from then on. Before any lookup the wrapper uses what the table
 * finds after this library (RTLD_NEXT: the driver, or another interposer loaded after us); the
 * first lookup's answer replaces that once. Another interposer's pointer coming back from a
 * lookup is kept as the real function like any other: its hook stays in the chain, after ours. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/types.h"
#include "shim/cuda_hooks.h"
#include "shim/cuda_resolve.h"

/* The wrapper of every wrapped entry. */
static void *const entry_wrapper[ROUNDTRIM_CUDA_WRAPPED_COUNT] = {
#define X(name) [ID_##name] = (void *)ROUNDTRIM_CUDA_OWN(name),
    ROUNDTRIM_CUDA_WRAPPED(X)
#undef X
};

static bool is_wrapper(const void *p)
{
    for (int i = 0; i < ROUNDTRIM_CUDA_WRAPPED_COUNT; i++)
        if (entry_wrapper[i] == p)
            return true;
    return false;
}

/* A lookup's answer for exactly this variant; the first one stays (see the top of the file). */
static void note_real(enum roundtrim_cuda_entry_id id, void *p)
{
    if (!is_wrapper(p))
        roundtrim_cuda_entry_answer(id, p);
}

static void *real_fn(enum roundtrim_cuda_entry_id id)
{
    return roundtrim_cuda_entry(id, entry_wrapper[id]);
}

/* The wrapper of the variant (name, version, per_thread) names exactly, or -1. known: whether the
 * name is one we wrap at all. */
static int variant_pick(const char *symbol, int version, bool per_thread, bool *known)
{
    const struct roundtrim_cuda_variant *best = NULL;
    *known = false;
    for (size_t i = 0; i < roundtrim_cuda_variant_count; i++) {
        const struct roundtrim_cuda_variant *v = &roundtrim_cuda_variants[i];
        if (strcmp(v->name, symbol) != 0)
            continue;
        *known = true;
        if (v->per_thread == per_thread && v->since <= version && (!best || v->since > best->since))
            best = v;
    }
    return best ? (int)best->id : -1;
}

/* The driver's export of every wrapped name, for the address match. Built once, on the first
 * lookup (it runs before cuInit, so it never initialises anything). */
static void *entry_export[ROUNDTRIM_CUDA_WRAPPED_COUNT];
static pthread_once_t entry_export_once = PTHREAD_ONCE_INIT;

static void entry_export_build(void)
{
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *h = roundtrim_cuda_driver_handle();
    if (!rdlsym || !h)
        return;
    for (int i = 0; i < ROUNDTRIM_CUDA_WRAPPED_COUNT; i++) {
        void *p = rdlsym(h, roundtrim_cuda_entry_name(i));
        entry_export[i] = is_wrapper(p) ? NULL : p;
    }
}

static int export_match(const void *p)
{
    pthread_once(&entry_export_once, entry_export_build);
    for (int i = 0; i < ROUNDTRIM_CUDA_WRAPPED_COUNT; i++)
        if (entry_export[i] == p)
            return i;
    return -1;
}

/* The real lookup a wrapper forwarded to, so that the decision can ask the driver again. */
struct lookup {
    enum roundtrim_cuda_entry_id form; /* ID_cuGetProcAddress: the 4-argument form */
    void *real;
};

static void *lookup_again(const struct lookup *l, const char *symbol, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CUresult rc =
        l->form == ID_cuGetProcAddress
            ? ((__typeof__(&cuGetProcAddress))l->real)(symbol, &p, version, flags)
            : ((__typeof__(&cuGetProcAddress_v2))l->real)(symbol, &p, version, flags, &status);
    return rc == CUDA_SUCCESS ? p : NULL;
}

/* The wrapper to hand out for the driver's answer p to (symbol, version, flags), or p itself.
 * Where the table alone could be wrong, the driver is asked again: a per-thread request is the
 * _ptsz variant only if the driver answers it differently from the plain one (for names without
 * one, and for cuGetProcAddress, it may not), and a version newer than the table is trusted only
 * if the driver gives the same answer at the table's version (a newer _vN would differ). */
static void *substitute(const struct lookup *l, const char *symbol, int version, cuuint64_t flags,
                        void *p)
{
    if (!p || !symbol || is_wrapper(p))
        return p;
    bool known, per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int v = version < ROUNDTRIM_CUDA_VARIANTS_VERSION ? version : ROUNDTRIM_CUDA_VARIANTS_VERSION;
    int id = variant_pick(symbol, v, false, &known);
    if (known && per_thread &&
        lookup_again(l, symbol, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != p)
        id = variant_pick(symbol, v, true, &known);
    if (id >= 0 && version > ROUNDTRIM_CUDA_VARIANTS_VERSION &&
        lookup_again(l, symbol, ROUNDTRIM_CUDA_VARIANTS_VERSION, flags) != p)
        id = -1;
    int by_address = export_match(p);
    if (by_address >= 0)
        id = by_address; /* the driver's own export names its variant */
    if (id < 0)
        return p;
    note_real((enum roundtrim_cuda_entry_id)id, p);
    return entry_wrapper[id];
}

static CUresult lookup_v2(enum roundtrim_cuda_entry_id form, const char *symbol, void **pfn,
                          int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *symbolStatus)
{
    struct lookup l = {form, real_fn(form)};
    if (!l.real && form == ID_cuGetProcAddress_v2_ptsz) /* drivers that do not export it */
        l = (struct lookup){ID_cuGetProcAddress_v2, real_fn(ID_cuGetProcAddress_v2)};
    if (!l.real)
        return NO_DRIVER;
    CUresult rc =
        ((__typeof__(&cuGetProcAddress_v2))l.real)(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute(&l, symbol, cudaVersion, flags, *pfn);
    return rc;
}

ROUNDTRIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup_v2(ID_cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* What cuda.h's per-thread-default-stream builds call: a request naming neither stream flavour
 * means per-thread. The flag is made explicit before the driver sees it, so the decision above and
 * the driver's answer agree whichever implementation the driver gave for this entry point. */
ROUNDTRIM_EXPORT CUresult cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!(flags &
          (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return lookup_v2(ID_cuGetProcAddress_v2_ptsz, symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3-11.8 form, without the status out-parameter. */
ROUNDTRIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                           cuuint64_t flags)
{
    struct lookup l = {ID_cuGetProcAddress, real_fn(ID_cuGetProcAddress)};
    if (!l.real)
        return NO_DRIVER;
    CUresult rc = ((__typeof__(&cuGetProcAddress))l.real)(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = substitute(&l, symbol, cudaVersion, flags, *pfn);
    return rc;
}

/* ---- dlsym on the driver's handle ---- */

static int entry_find(const char *name)
{
    for (int i = 0; i < ROUNDTRIM_CUDA_WRAPPED_COUNT; i++)
        if (strcmp(roundtrim_cuda_entry_name(i), name) == 0)
            return i;
    return -1;
}

/* Only a lookup in the very driver object this process loaded as libcuda.so.1 gets a wrapper, and
 * only when the caller is not that driver itself: a driver that looks itself up, or a loader stub
 * that looks up the driver it loads (WSL2's libcuda.so.1 loads another libcuda file), keeps its
 * own pointers, or every call would come back through our wrapper and the wrapper call itself.
 * Another library that happens to export a cu* name (a vGPU layer, a stub) keeps its own too. */
void *roundtrim_cuda_dlsym_substitute(void *handle, const char *name, const void *caller)
{
    int id = entry_find(name);
    if (id < 0)
        return NULL;
    void *(*rdlsym)(void *, const char *) = roundtrim_real_dlsym();
    void *driver = roundtrim_cuda_driver_handle();
    if (!rdlsym || !driver || handle != driver)
        return NULL;
    Dl_info info;
    struct link_map *caller_map = NULL;
    if (caller && dladdr1(caller, &info, (void **)&caller_map, RTLD_DL_LINKMAP) &&
        (void *)caller_map == driver)
        return NULL;
    void *p = rdlsym(handle, name);
    if (!p || is_wrapper(p))
        return NULL; /* forwarded: the real dlsym gives the same answer to the caller */
    /* Whatever the lookup found (the driver's export, or another interposer's hook in front of
     * it) becomes the next function after our wrapper. */
    note_real((enum roundtrim_cuda_entry_id)id, p);
    return entry_wrapper[id];
}

/* The hidden aliases of shim/cuda_resolve.h for the wrappers defined here. */
ROUNDTRIM_CUDA_WRAPPED_LOOKUPS(ROUNDTRIM_CUDA_OWN_DEFINE)
