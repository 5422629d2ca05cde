#include "runtime/core/loaded_object.h"

#include <link.h>

#include "runtime/core/loader_tables.h"
#include "runtime/core/text.h"

struct search {
    uintptr_t addr;
    unsigned index;
    bool found;
    struct roundtrim_loaded_object *out;
};

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct search *s = arg;
    unsigned index = s->index++;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (s->addr - start < ph->p_memsz) {
            s->out->path = info->dlpi_name ? info->dlpi_name : "";
            s->out->bias = info->dlpi_addr;
            s->out->main_program = index == 0; /* the loader lists the executable first */
            s->found = true;
            return 1;
        }
    }
    return 0;
}

bool roundtrim_loaded_object_of(const void *addr, struct roundtrim_loaded_object *out)
{
    struct search s = {(uintptr_t)addr, 0, false, out};
    if (!addr)
        return false;
    /* The objects loaded at start are listed first, each at its place (the vDSO, which the
     * tables leave out, maps nothing of theirs). */
    if (roundtrim_tables_owner(addr, out))
        return true;
    dl_iterate_phdr(visit, &s);
    return s.found;
}

bool roundtrim_loaded_object_is_libc(const struct roundtrim_loaded_object *obj)
{
    /* The file's own name, not a folder's: libc.so.6, libc.so */
    const char *base = obj->path;
    for (const char *s = obj->path; *s; s++)
        if (*s == '/')
            base = s + 1;
    return roundtrim_starts_with(base, "libc.so");
}

bool roundtrim_loaded_object_same(const struct roundtrim_loaded_object *a,
                                  const struct roundtrim_loaded_object *b)
{
    if (a->bias != b->bias)
        return false;
    /* The loader's own name string, as a rule: both were read from its list. */
    if (a->path == b->path)
        return true;
    const char *x = a->path, *y = b->path;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    return *x == *y;
}
