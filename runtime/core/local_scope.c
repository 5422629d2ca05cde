#include "runtime/core/local_scope.h"

#include <stdint.h>

#include "runtime/core/text.h"

struct object_search {
    uintptr_t addr;     /* find the object mapping this, or else */
    const char *needed; /* the one a DT_NEEDED entry of this name loads */
    struct dl_phdr_info *out;
    bool found;
};

static bool maps_address(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
            return true;
    }
    return false;
}

static const char *base_name(const char *path)
{
    const char *base = path;
    for (const char *s = path; *s; s++)
        if (*s == '/')
            base = s + 1;
    return base;
}

/* The loader loads a DT_NEEDED name once: a later reference matches a loaded object by its
 * DT_SONAME or by the name it was loaded under, the first such in its list. */
static bool loads_needed(const struct dl_phdr_info *info, const char *needed)
{
    const char *soname = roundtrim_tables_soname(info);
    if (soname && roundtrim_same_string(soname, needed))
        return true;
    return info->dlpi_name && info->dlpi_name[0] &&
           roundtrim_same_string(roundtrim_contains(needed, "/") ? info->dlpi_name
                                                                 : base_name(info->dlpi_name),
                                 needed);
}

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object_search *s = arg;
    if (s->needed ? !loads_needed(info, s->needed) : !maps_address(info, s->addr))
        return 0;
    *s->out = *info;
    s->found = true;
    return 1;
}

bool roundtrim_local_scope_has(const struct roundtrim_scope *scope, const struct dl_phdr_info *info)
{
    for (unsigned i = 0; i < scope->count; i++)
        if (scope->objects[i].dlpi_addr == info->dlpi_addr &&
            scope->objects[i].dlpi_phdr == info->dlpi_phdr)
            return true;
    return false;
}

bool roundtrim_local_scope_of(const void *addr, struct roundtrim_scope *out)
{
    struct object_search s = {(uintptr_t)addr, NULL, &out->objects[0], false};
    out->count = 0;
    dl_iterate_phdr(find_object, &s);
    if (!s.found)
        return false;
    out->count = 1;
    /* Breadth first: the queue is the scope itself. */
    for (unsigned k = 0; k < out->count; k++) {
        const char *needed;
        for (unsigned d = 0; (needed = roundtrim_tables_needed(&out->objects[k], d)); d++) {
            struct dl_phdr_info dep;
            struct object_search n = {0, needed, &dep, false};
            dl_iterate_phdr(find_object, &n);
            if (!n.found || roundtrim_local_scope_has(out, &dep))
                continue;
            if (out->count == ROUNDTRIM_SCOPE_MAX)
                return true;
            out->objects[out->count++] = dep;
        }
    }
    return true;
}

void roundtrim_local_scope_drop(struct roundtrim_scope *scope, const void *addr)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < scope->count; i++)
        if (!maps_address(&scope->objects[i], (uintptr_t)addr))
            scope->objects[kept++] = scope->objects[i];
    scope->count = kept;
}

bool roundtrim_local_scope_find(const struct roundtrim_scope *scope, const char *name,
                                struct roundtrim_symbol *out)
{
    for (unsigned i = 0; i < scope->count; i++)
        if (roundtrim_tables_own_definition(&scope->objects[i], name, out) == RT_SYM_FOUND)
            return true;
    return false;
}
