#include "runtime/core/loaded_object.h"

#include <link.h>
#include <string.h>

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
    dl_iterate_phdr(visit, &s);
    return s.found;
}

bool roundtrim_loaded_object_same(const struct roundtrim_loaded_object *a,
                                  const struct roundtrim_loaded_object *b)
{
    return a->bias == b->bias && strcmp(a->path, b->path) == 0;
}
