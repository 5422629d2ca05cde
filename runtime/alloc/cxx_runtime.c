#include "runtime/alloc/cxx_runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

#include "runtime/alloc/next_alloc.h"
#include "runtime/core/loaded_object.h"
#include "runtime/core/loader_tables.h"
#include "runtime/core/local_scope.h"
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

/* libc++.so.1 leaves operator new to libc++abi.so.1 (it is undefined there). */
static bool is_cxx_runtime(const char *path)
{
    const char *base = path;
    for (const char *s = path; *s; s++)
        if (*s == '/')
            base = s + 1;
    return roundtrim_starts_with(base, "libstdc++.so") ||
           roundtrim_starts_with(base, "libc++abi.so") || roundtrim_starts_with(base, "libc++.so");
}

/* Whether the blocks of the binding's operator new are counted here: it is the next malloc's
 * library's own (jemalloc, tcmalloc, mimalloc), so its calls may not reach our malloc. */
static void note_counting(struct roundtrim_cxx_binding *b)
{
    struct roundtrim_loaded_object op_lib, malloc_lib;
    b->counts_here = roundtrim_loaded_object_of(b->op[0], &op_lib) &&
                     roundtrim_loaded_object_of((void *)roundtrim_next.malloc, &malloc_lib) &&
                     roundtrim_loaded_object_same(&op_lib, &malloc_lib);
}

static void clear(struct roundtrim_cxx_binding *b)
{
    for (int i = 0; i < ROUNDTRIM_CXX_NAMES_MAX; i++)
        b->op[i] = NULL;
    b->counts_here = false;
}

static void fill_next(const char *const names[], int count, struct roundtrim_cxx_binding *out)
{
    for (int i = 0; i < count; i++)
        out->op[i] = roundtrim_next_symbol(names[i]);
}

struct path_copy {
    uintptr_t addr;
    char path[PATH_MAX];
    bool found, main_program;
    unsigned index;
};

/* The path of the object that maps addr, copied while the loader's list is locked: the loader's
 * own string goes with the object. */
static int copy_path(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct path_copy *c = arg;
    bool main_program = c->index++ == 0; /* the loader lists the executable first */
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || c->addr - (info->dlpi_addr + ph->p_vaddr) >= ph->p_memsz)
            continue;
        const char *name = info->dlpi_name ? info->dlpi_name : "";
        size_t len = strlen(name);
        if (len >= sizeof c->path)
            return 1;
        memcpy(c->path, name, len + 1);
        c->found = true;
        c->main_program = main_program || !name[0];
        return 1;
    }
    return 0;
}

/* Takes a loader reference on the object defining addr (*handle, for dlclose), unless it was
 * loaded with the program (those stay: *handle NULL). False when the object is gone. */
static bool hold(void *addr, void **handle)
{
    *handle = NULL;
    struct roundtrim_loaded_object at_start;
    if (roundtrim_tables_owner(addr, &at_start))
        return true;
    struct path_copy c = {(uintptr_t)addr, {0}, false, false, 0};
    dl_iterate_phdr(copy_path, &c);
    if (!c.found)
        return false;
    if (c.main_program)
        return true;
    roundtrim_dlerror_note();
    *handle = dlopen(c.path, RTLD_LAZY | RTLD_NOLOAD);
    roundtrim_dlerror_forget();
    return *handle != NULL;
}

/* Reads the names from the first loaded libstdc++ or libc++abi (its own table: no dlopen, no
 * allocation, no message for dlerror; the loader's lock held by dl_iterate_phdr keeps it
 * loaded meanwhile). */
struct runtime_search {
    const char *const *names;
    int count;
    struct roundtrim_cxx_binding *out;
    bool found;
};

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
        s->out->op[i] = roundtrim_tables_own_definition(info, s->names[i], &sym) == RT_SYM_FOUND
                            ? sym.addr
                            : NULL;
    s->found = true;
    return 1;
}

static bool find_any(const char *const names[], int count, struct roundtrim_cxx_binding *out)
{
    /* The global scope as loaded at start (a preloaded allocator's operator new, or libstdc++
     * linked with the program), as dlsym(RTLD_NEXT) answers. */
    struct roundtrim_symbol sym;
    enum roundtrim_symbol_answer first = roundtrim_tables_next(names[0], &sym);
    if (first == RT_SYM_FOUND) {
        fill_next(names, count, out);
        return out->op[0] != NULL;
    }
    if (first == RT_SYM_ABSENT)
        return false; /* nothing was loaded since the start */
    struct runtime_search s = {names, count, out, false};
    dl_iterate_phdr(read_runtime, &s);
    if (s.found)
        return true;
    /* Something else defines it after the start (an allocator opened with RTLD_GLOBAL): the
     * loader knows. */
    fill_next(names, count, out);
    return out->op[0] != NULL;
}

bool roundtrim_cxx_runtime_find(const char *const names[], int count,
                                struct roundtrim_cxx_binding *out)
{
    clear(out);
    void *handle; /* never released: no library's binding says how long it is needed */
    if (!find_any(names, count, out) || !hold(out->op[0], &handle)) {
        clear(out);
        return false;
    }
    note_counting(out);
    return true;
}

bool roundtrim_cxx_runtime_for_everyone(const char *const names[], int count,
                                        struct roundtrim_cxx_binding *out)
{
    clear(out);
    struct roundtrim_symbol sym;
    if (roundtrim_tables_next(names[0], &sym) != RT_SYM_FOUND)
        return false;
    fill_next(names, count, out);
    if (!out->op[0])
        return false;
    note_counting(out);
    return true;
}

/* The global scope after roundtrim, now: an object opened RTLD_GLOBAL since the start counts. */
static void from_global_scope(const char *const names[], int count,
                              struct roundtrim_cxx_binding *out, void **held)
{
    void *op = roundtrim_next_symbol(names[0]);
    if (!op || !hold(op, held))
        return;
    /* Held now; had it been closed meanwhile, the name would now find something else. */
    if (roundtrim_next_symbol(names[0]) != op) {
        if (*held)
            dlclose(*held);
        *held = NULL;
        return;
    }
    fill_next(names, count, out);
    out->op[0] = op;
}

/* Each name the global scope left undefined from the caller's own scope, as the loader binds
 * each reference on its own (an allocator that overrides only the plain forms leaves aligned
 * new and the new handler to the library's runtime). */
static void from_own_scope(const struct roundtrim_scope *scope, const char *const names[],
                           int count, struct roundtrim_cxx_binding *out)
{
    struct roundtrim_symbol sym;
    for (int i = 0; i < count; i++)
        if (!out->op[i] && roundtrim_local_scope_find(scope, names[i], &sym))
            out->op[i] = sym.addr;
}

struct definers {
    const char *name;
    const struct roundtrim_scope *scope;
    unsigned in_scope, elsewhere;
};

static int count_definers(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct definers *d = arg;
    struct roundtrim_loaded_object at_start;
    struct roundtrim_symbol sym;
    /* Those loaded at start (roundtrim among them) were searched already: nothing after
     * roundtrim defines the name there, or every call would go there. */
    if (roundtrim_tables_owner(info->dlpi_phdr, &at_start) ||
        roundtrim_tables_own_definition(info, d->name, &sym) == RT_SYM_ABSENT)
        return 0;
    if (roundtrim_local_scope_has(d->scope, info))
        d->in_scope++;
    else
        d->elsewhere++;
    return 0;
}

/* Whether the loader must be asked what the global scope holds. Only it knows which objects were
 * opened RTLD_GLOBAL, and a lookup that finds nothing allocates its message (counted as the
 * program's): where the only definition loaded since the start is the one in the caller's own
 * scope, both searches end there, and the loader is not asked. */
static bool global_scope_unsure(const struct roundtrim_scope *scope, const char *name)
{
    struct roundtrim_loaded_object self;
    if (!roundtrim_tables_owner((const void *)global_scope_unsure, &self))
        return true; /* the tables did not search the objects loaded at start */
    struct definers d = {name, scope, 0, 0};
    dl_iterate_phdr(count_definers, &d);
    return d.elsewhere > 0 || d.in_scope > 1;
}

struct load_order {
    uintptr_t held_addr;
    const struct dl_phdr_info *object;
    bool held_seen, after;
};

static int note_order(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct load_order *o = arg;
    if (info->dlpi_addr == o->object->dlpi_addr && info->dlpi_phdr == o->object->dlpi_phdr) {
        o->after = o->held_seen;
        return 1;
    }
    for (unsigned i = 0; i < info->dlpi_phnum && !o->held_seen; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        o->held_seen =
            ph->p_type == PT_LOAD && o->held_addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz;
    }
    return 0;
}

/* Whether a C++ runtime among the caller's dependencies was loaded after the object defining op
 * (the loader lists objects in load order): its own references to the name were then bound to
 * that object when it was relocated, and the loader keeps that object as long as the runtime,
 * which for libstdc++ (never unloaded) is for good. */
static bool runtime_bound_at_load(const struct roundtrim_scope *scope, const char *name, void *op)
{
    struct roundtrim_symbol sym;
    for (unsigned i = 1; i < scope->count; i++) {
        if (roundtrim_tables_own_definition(&scope->objects[i], name, &sym) != RT_SYM_FOUND)
            continue;
        struct load_order o = {(uintptr_t)op, &scope->objects[i], false, false};
        dl_iterate_phdr(note_order, &o);
        if (o.after)
            return true;
    }
    return false;
}

bool roundtrim_cxx_runtime_for_caller(const void *caller, const char *const names[], int count,
                                      struct roundtrim_cxx_binding *out, void **held)
{
    clear(out);
    *held = NULL;
    struct roundtrim_scope scope;
    bool placed = roundtrim_local_scope_of(caller, &scope);
    if (placed)
        roundtrim_local_scope_drop(&scope, (const void *)from_own_scope);
    if (!placed || global_scope_unsure(&scope, names[0]))
        from_global_scope(names, count, out, held);
    if (*held && placed && runtime_bound_at_load(&scope, names[0], out->op[0]))
        *held = NULL; /* kept for good, as that runtime keeps it bare */
    if (placed)
        from_own_scope(&scope, names, count, out);
    if (out->op[0]) {
        note_counting(out);
        return true;
    }
    return roundtrim_cxx_runtime_find(names, count, out);
}
