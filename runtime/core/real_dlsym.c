#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/core/real_dlsym.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/core/loader_tables.h"

/* Read by the trampoline (8-byte aligned pointer: a plain load is atomic on both targets). */
__attribute__((visibility("hidden"))) roundtrim_dlsym_fn roundtrim_dlsym_real;

/* Set while this thread resolves the real dlsym: dlvsym may allocate, the malloc bootstrap may
 * then call dlsym again, and that nested call must not resolve again (it gets NULL). */
static __thread int resolving;

/* Whether roundtrim has asked the loader anything that may fail (every dlsym of its own goes
 * through the real dlsym, resolved first): until then no message of roundtrim's can be waiting
 * for the program's dlerror, since the loader's tables leave none. */
static bool loader_asked;

void roundtrim_dlerror_note(void)
{
    __atomic_store_n(&loader_asked, true, __ATOMIC_RELAXED);
}

roundtrim_dlsym_fn roundtrim_real_dlsym(void)
{
    roundtrim_dlsym_fn fn = __atomic_load_n(&roundtrim_dlsym_real, __ATOMIC_ACQUIRE);
    if (fn || resolving)
        return fn;
    resolving = 1;
    roundtrim_dlerror_note();
    /* glibc 2.34 moved dlsym into libc with a new version; older ones only have GLIBC_2.2.5
     * (GLIBC_2.17 on aarch64). __libc_dlsym is gone since 2.34. */
    fn = (roundtrim_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__aarch64__)
    if (!fn)
        fn = (roundtrim_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#else
    if (!fn)
        fn = (roundtrim_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#endif
    if (fn)
        __atomic_store_n(&roundtrim_dlsym_real, fn, __ATOMIC_RELEASE);
    resolving = 0;
    return fn;
}

void roundtrim_dlerror_forget(void)
{
    if (!__atomic_load_n(&loader_asked, __ATOMIC_RELAXED))
        return;
    roundtrim_dlsym_fn fn = roundtrim_real_dlsym();
    /* dlsym frees the thread's previous result before it starts; this one always succeeds
     * (the library's own export), so it leaves none. Not a tail call: glibc scopes the lookup by
     * its return address, which must be in this library. */
    if (fn)
        fn(RTLD_DEFAULT, "malloc");
    __asm__ volatile("" ::: "memory");
}

/* The tables' answer where it settles the lookup (no dlsym, no message for dlerror), else the
 * real dlsym's: asked from here (never a tail call), RTLD_NEXT and RTLD_DEFAULT are this
 * library's, as for the tables; a failure's message is discarded. */
static void *tables_or_loader(enum roundtrim_symbol_answer a, const struct roundtrim_symbol *found,
                              void *handle, const char *name)
{
    void *p;
    if (roundtrim_symbol_settled(a, found, &p))
        return p;
    roundtrim_dlsym_fn fn = roundtrim_real_dlsym();
    p = fn ? fn(handle, name) : NULL;
    if (fn && !p)
        roundtrim_dlerror_forget();
    __asm__ volatile("" ::: "memory");
    return p;
}

void *roundtrim_next_symbol(const char *name)
{
    struct roundtrim_symbol found;
    return tables_or_loader(roundtrim_tables_next(name, &found), &found, RTLD_NEXT, name);
}

void *roundtrim_default_symbol(const char *name)
{
    struct roundtrim_symbol found;
    return tables_or_loader(roundtrim_tables_default(name, &found), &found, RTLD_DEFAULT, name);
}
