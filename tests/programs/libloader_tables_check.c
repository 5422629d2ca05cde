/* Checks runtime/core/loader_tables.c against the loader itself: preloaded (the tables describe
 * this library as they describe libroundtrim.so), it asks the tables and dlsym the same questions
 * for every name in the dynamic symbol tables of every loaded object, plus names found nowhere,
 * and prints one JSON line on stderr: how many answers the tables gave, how many they left to the
 * loader, and every answer that differs from the loader's (there must be none).
 *
 * LOADER_TABLES_CHECK_DLOPEN=path[:global] opens that library first (RTLD_LOCAL, or RTLD_GLOBAL),
 * so that objects follow the loader's own entry. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/loader_tables.h"

#define MAX_NAMES 40000
#define MAX_SHOWN 20

static const char *names[MAX_NAMES];
static unsigned name_count;

struct tally {
    unsigned answered, asked, wrong;
};

static unsigned shown;

static void note_wrong(struct tally *t, const char *kind, const char *name, const void *ours,
                       const void *loader)
{
    t->wrong++;
    if (shown++ < MAX_SHOWN)
        fprintf(stderr, "loader_tables_check: %s %s: tables %p, loader %p\n", kind, name, ours,
                loader);
}

static void compare(struct tally *t, const char *kind, const char *name,
                    enum roundtrim_symbol_answer a, const struct roundtrim_symbol *s, void *loader)
{
    if (a == RT_SYM_ASK_LOADER) {
        t->asked++;
        return;
    }
    t->answered++;
    void *ours = a == RT_SYM_FOUND ? s->addr : NULL;
    if (ours != loader)
        note_wrong(t, kind, name, ours, loader);
}

/* The number of entries of an object's dynamic symbol table, from its hash table. */
static uint32_t symbol_count(const ElfW(Dyn) * dyn, uintptr_t bias, bool relative)
{
    const uint32_t *gnu = NULL, *sysv = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn->d_un.d_ptr + (relative ? bias : 0);
        if (dyn->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)p;
        else if (dyn->d_tag == DT_HASH)
            sysv = (const uint32_t *)p;
    }
    if (sysv)
        return sysv[1];
    if (!gnu)
        return 0;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return last + 1;
}

static int gather(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const ElfW(Phdr) *dyn_ph = NULL;
    for (unsigned i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn_ph = &info->dlpi_phdr[i];
    if (!dyn_ph)
        return 0;
    bool relative = !(dyn_ph->p_flags & PF_W);
    const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + dyn_ph->p_vaddr);
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        uintptr_t p = d->d_un.d_ptr + (relative ? info->dlpi_addr : 0);
        if (d->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)p;
        else if (d->d_tag == DT_STRTAB)
            strtab = (const char *)p;
    }
    if (!symtab || !strtab)
        return 0;
    uint32_t n = symbol_count(dyn, info->dlpi_addr, relative);
    for (uint32_t i = 1; i < n && name_count < MAX_NAMES; i++)
        if (symtab[i].st_name)
            names[name_count++] = strtab + symtab[i].st_name;
    return 0;
}

struct object {
    struct roundtrim_loaded_object obj;
    void *handle;
    struct dl_phdr_info info; /* for roundtrim_tables_own_definition (the objects stay loaded) */
};

#define MAX_OBJECTS 64
static struct object objects[MAX_OBJECTS];
static unsigned object_count;

static int list_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (object_count == MAX_OBJECTS)
        return 1;
    struct object *o = &objects[object_count];
    o->obj.path = info->dlpi_name ? info->dlpi_name : "";
    o->obj.bias = info->dlpi_addr;
    o->obj.main_program = object_count == 0;
    o->info = *info;
    o->handle = o->obj.main_program || !o->obj.path[0]
                    ? NULL
                    : dlopen(o->obj.path, RTLD_LAZY | RTLD_NOLOAD);
    object_count++;
    return 0;
}

/* The first object after the executable whose own table defines name, as the loader says. */
static void *first_after_main_by_loader(const char *name)
{
    void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *map = NULL;
    if (!self || dlinfo(self, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return NULL;
    for (map = map->l_next; map; map = map->l_next) {
        if (strncmp(map->l_name, "linux-vdso", 10) == 0 ||
            strncmp(map->l_name, "linux-gate", 10) == 0)
            continue; /* the tables leave the vDSO out */
        void *obj = map->l_name[0] ? dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        void *fn = obj ? dlsym(obj, name) : NULL;
        Dl_info info;
        struct link_map *owner = NULL;
        if (obj)
            dlclose(obj);
        if (fn && dladdr1(fn, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == map)
            return fn;
    }
    return NULL;
}

/* What dlsym on the object's handle finds in the object itself (not in a dependency). */
static void *own_by_loader(const struct object *o, const char *name)
{
    void *fn = dlsym(o->handle, name);
    struct roundtrim_loaded_object owner;
    if (!fn || !roundtrim_loaded_object_of(fn, &owner))
        return NULL;
    return owner.bias == o->obj.bias && strcmp(owner.path, o->obj.path) == 0 ? fn : NULL;
}

static void run(const char *when)
{
    static const char *const absent[] = {"roundtrim_no_such_symbol", "Py_IsInitialized", "mallctl",
                                         "_PyRuntime", "cuMemAlloc_v2"};
    name_count = 0;
    dl_iterate_phdr(gather, NULL);
    for (size_t i = 0; i < sizeof absent / sizeof absent[0] && name_count < MAX_NAMES; i++)
        names[name_count++] = absent[i];
    object_count = 0;
    dl_iterate_phdr(list_objects, NULL);

    struct tally next = {0}, deflt = {0}, handle = {0}, after_main = {0}, own = {0};
    struct roundtrim_symbol s;
    for (unsigned i = 0; i < name_count; i++) {
        const char *name = names[i];
        enum roundtrim_symbol_answer a = roundtrim_tables_next(name, &s);
        compare(&next, "next", name, a, &s, dlsym(RTLD_NEXT, name));
        a = roundtrim_tables_default(name, &s);
        compare(&deflt, "default", name, a, &s, dlsym(RTLD_DEFAULT, name));
        if (i % 16 == 0 || i + 8 > name_count) {
            a = roundtrim_tables_first_after_main(name, &s);
            compare(&after_main, "first_after_main", name, a, &s,
                    a == RT_SYM_ASK_LOADER ? NULL : first_after_main_by_loader(name));
        }
        for (unsigned k = 0; k < object_count; k++) {
            if (!objects[k].handle)
                continue;
            a = roundtrim_tables_in_object(&objects[k].obj, name, &s);
            char kind[300];
            snprintf(kind, sizeof kind, "in_object(%s)", objects[k].obj.path);
            compare(&handle, kind, name, a, &s,
                    a == RT_SYM_ASK_LOADER ? NULL : dlsym(objects[k].handle, name));
            /* (the loader's own handle answers by rules of its own: left out) */
            if ((i % 4 == 0 || i + 8 > name_count) && !strstr(objects[k].obj.path, "/ld-")) {
                a = roundtrim_tables_own_definition(&objects[k].info, name, &s);
                snprintf(kind, sizeof kind, "own_definition(%s)", objects[k].obj.path);
                compare(&own, kind, name, a, &s,
                        a == RT_SYM_ASK_LOADER ? NULL : own_by_loader(&objects[k], name));
            }
        }
    }
    for (unsigned k = 0; k < object_count; k++)
        if (objects[k].handle)
            dlclose(objects[k].handle);
    fprintf(stderr,
            "{\"when\":\"%s\",\"names\":%u,\"objects\":%u,"
            "\"next\":[%u,%u,%u],\"default\":[%u,%u,%u],\"in_object\":[%u,%u,%u],"
            "\"first_after_main\":[%u,%u,%u],\"own_definition\":[%u,%u,%u]}\n",
            when, name_count, object_count, next.answered, next.asked, next.wrong, deflt.answered,
            deflt.asked, deflt.wrong, handle.answered, handle.asked, handle.wrong,
            after_main.answered, after_main.asked, after_main.wrong, own.answered, own.asked,
            own.wrong);
}

__attribute__((constructor)) static void check(void)
{
    /* The tables first, as roundtrim builds them at start: the check's own dlopen calls below
     * (list_objects) may reorder the loader's list of objects (a filter's filtee moves). */
    struct roundtrim_symbol first;
    (void)roundtrim_tables_default("malloc", &first);
    run("start");
    const char *open = getenv("LOADER_TABLES_CHECK_DLOPEN");
    if (open && *open) {
        char path[4096];
        snprintf(path, sizeof path, "%s", open);
        char *flag = strrchr(path, ':');
        int mode = RTLD_NOW | RTLD_LOCAL;
        if (flag && strcmp(flag, ":global") == 0) {
            *flag = '\0';
            mode = RTLD_NOW | RTLD_GLOBAL;
        }
        if (!dlopen(path, mode)) {
            fprintf(stderr, "loader_tables_check: dlopen %s: %s\n", path, dlerror());
            return;
        }
        run("after_dlopen");
    }
}
