#include "runtime/alloc/cxx_runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "runtime/core/loader_tables.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/core/text.h"

static int count_added(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        *(uint64_t *)arg = info->dlpi_adds;
    return 1; /* the first object carries the counts: stop there */
}

uint64_t roundtrim_loaded_objects_added(void)
{
    uint64_t adds = 0;
    dl_iterate_phdr(count_added, &adds);
    return adds;
}

static bool is_cxx_runtime(const char *path)
{
    const char *base = path;
    for (const char *s = path; *s; s++)
        if (*s == '/')
            base = s + 1;
    return roundtrim_starts_with(base, "libstdc++.so") || roundtrim_starts_with(base, "libc++.so");
}

struct runtime_search {
    const char *const *names;
    void **out;
    int count;
    bool found;
};

/* Reads the names from the first loaded libstdc++ or libc++ (its own table: no dlopen, no
 * allocation, no message for dlerror; the loader's lock held by dl_iterate_phdr keeps it
 * loaded meanwhile). The runtime is never unloaded after: its unique symbols make the loader
 * keep it. */
static int read_runtime(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct runtime_search *s = arg;
    if (!info->dlpi_name || !is_cxx_runtime(info->dlpi_name))
        return 0;
    struct roundtrim_symbol sym;
    if (roundtrim_tables_own_definition(info, s->names[0], &sym) != RT_SYM_FOUND)
        return 0;
    for (int i = 0; i < s->count; i++)
        s->out[i] = roundtrim_tables_own_definition(info, s->names[i], &sym) == RT_SYM_FOUND
                        ? sym.addr
                        : NULL;
    s->found = true;
    return 1;
}

bool roundtrim_cxx_runtime_find(const char *const names[], void *out[], int count)
{
    for (int i = 0; i < count; i++)
        out[i] = NULL;
    /* The global scope as loaded at start (a preloaded allocator's operator new, or libstdc++
     * linked with the program), as dlsym(RTLD_NEXT) answers. */
    struct roundtrim_symbol sym;
    enum roundtrim_symbol_answer first = roundtrim_tables_next(names[0], &sym);
    if (first == RT_SYM_FOUND) {
        for (int i = 0; i < count; i++)
            out[i] = roundtrim_next_symbol(names[i]);
        return out[0] != NULL;
    }
    if (first == RT_SYM_ABSENT)
        return false; /* nothing was loaded since the start */
    struct runtime_search s = {names, out, count, false};
    dl_iterate_phdr(read_runtime, &s);
    if (s.found)
        return true;
    /* Something else defines it after the start (an allocator opened with RTLD_GLOBAL): the
     * loader knows. */
    out[0] = roundtrim_next_symbol(names[0]);
    if (!out[0])
        return false;
    for (int i = 1; i < count; i++)
        out[i] = roundtrim_next_symbol(names[i]);
    return true;
}
