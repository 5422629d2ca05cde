#include "runtime/python/arenas.h"

#include <link.h>

static uintptr_t text_lo, text_hi; /* the interpreter's executable segments */
static bool started_before;        /* the interpreter ran before its code was known */
static int64_t arena_bytes;

struct text_range {
    uintptr_t inside; /* an address in the interpreter's code */
    uintptr_t lo, hi;
};

/* The executable segments of the object whose code holds t->inside (by address: an executable
 * built without PIE has a load bias of 0, whatever dladdr says its base is). */
static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text_range *t = arg;
    uintptr_t lo = 0, hi = 0;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        holds |= t->inside >= a && t->inside < b;
        if (!lo || a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (!holds)
        return 0;
    t->lo = lo;
    t->hi = hi;
    return 1;
}

void roundtrim_python_arenas_init(const struct roundtrim_py_api *api)
{
    if (text_hi || !api->GetVersion)
        return;
    struct text_range t = {(uintptr_t)api->GetVersion, 0, 0};
    dl_iterate_phdr(find_text, &t);
    if (!t.hi)
        return;
    /* An interpreter found once it runs (a libpython loaded late) has arenas uncounted. */
    started_before = api->IsInitialized && api->IsInitialized();
    __atomic_store_n(&text_lo, t.lo, __ATOMIC_RELAXED);
    __atomic_store_n(&text_hi, t.hi, __ATOMIC_RELEASE);
}

void roundtrim_python_arena_note(const void *caller, size_t len, bool mapped)
{
    uintptr_t hi = __atomic_load_n(&text_hi, __ATOMIC_ACQUIRE), at = (uintptr_t)caller;
    if (at >= hi || at < __atomic_load_n(&text_lo, __ATOMIC_RELAXED))
        return;
    __atomic_add_fetch(&arena_bytes, mapped ? (int64_t)len : -(int64_t)len, __ATOMIC_RELAXED);
}

enum roundtrim_skip roundtrim_python_arena_bytes(uint64_t *bytes)
{
    *bytes = 0;
    if (!__atomic_load_n(&text_hi, __ATOMIC_ACQUIRE))
        return RT_SKIP_no_python;
    if (started_before)
        return RT_SKIP_python_found_late;
    int64_t n = __atomic_load_n(&arena_bytes, __ATOMIC_RELAXED);
    *bytes = n > 0 ? (uint64_t)n : 0;
    return RT_SKIP_NONE;
}
