#include "runtime/alloc/allocator_ops.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stddef.h>
#include <string.h>

#include "policy/cleanup_actions.h"
#include "runtime/core/clock.h"
#include "runtime/core/loaded_object.h"
#include "runtime/core/loader_tables.h"
#include "runtime/core/real_dlsym.h"
#include "runtime/core/settings.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/alloc/next_alloc.h"

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*malloc_trim_fn)(size_t);
typedef int (*mallopt_fn)(int, int);

static enum roundtrim_allocator kind = RT_ALLOC_OTHER;
static char other_name[256] = "other";
static mallctl_fn je_mallctl;
static malloc_trim_fn glibc_malloc_trim;
static struct roundtrim_loaded_object glibc_object;

/* When the program's malloc is not ours (an allocator preloaded before roundtrim, one linked
 * into the executable, a library loaded with dlopen), none of the program's calls reach the
 * hooks: the counts would be a false zero. */
static enum roundtrim_skip counts_skipped;

/* The name of the object that defines fn: its file's base name, or "unknown" when it is no
 * shared library (the executable itself). */
static void name_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strstr(base, ".so"))
        base = "unknown";
    strncpy(other_name, base, sizeof other_name - 1);
}

/* The first definition of malloc after the executable's stub, asked of the loader object by
 * object (the tables could not tell). */
static void *first_definition_after_main(void *first)
{
    Dl_info info;
    roundtrim_dlerror_note();
    void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *map = NULL;
    if (!self || dlinfo(self, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return first;
    for (map = map->l_next; map; map = map->l_next) {
        void *obj = map->l_name[0] ? dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        void *fn = obj ? dlsym(obj, "malloc") : NULL;
        struct link_map *owner = NULL;
        if (obj)
            dlclose(obj);
        if (fn && dladdr1(fn, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == map)
            return fn;
    }
    return first;
}

/* The same from the loader alone: dlsym's answer, then its entry in the executable's table. */
static void *first_malloc_from_loader(void)
{
    void *first = dlsym(RTLD_DEFAULT, "malloc");
    struct roundtrim_loaded_object where;
    /* Only the executable can hold such a stub: anywhere else, the answer is the definition. */
    if (!first || !roundtrim_loaded_object_of(first, &where) || !where.main_program)
        return first;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || sym->st_shndx != SHN_UNDEF)
        return first;
    return first_definition_after_main(first);
}

/* The first object in the search order that defines malloc itself: the one the program's calls
 * reach. dlsym's answer alone does not tell: in an executable built without -fPIE that takes
 * malloc's address, it is the executable's own stub, which only points further. The loader's
 * tables answer both questions at start without a lookup of the loader's (no dladdr). */
static void *first_malloc_definition(void)
{
    struct roundtrim_symbol first, def;
    switch (roundtrim_tables_default("malloc", &first)) {
    case RT_SYM_ABSENT:
        return NULL;
    case RT_SYM_ASK_LOADER:
        return first_malloc_from_loader();
    case RT_SYM_FOUND:
        break;
    }
    if (!first.where.main_program || first.sym->st_shndx != SHN_UNDEF)
        return first.addr;
    switch (roundtrim_tables_first_after_main("malloc", &def)) {
    case RT_SYM_FOUND:
        return def.addr;
    case RT_SYM_ABSENT:
        return first.addr;
    case RT_SYM_ASK_LOADER:
        break;
    }
    return first_definition_after_main(first.addr);
}

/* The allocator's own functions: dlsym(handle of its object, name), from the loader's tables
 * where they are sure, else from a handle opened (without loading anything) at the first need. */
struct allocator_object {
    const struct roundtrim_loaded_object *obj;
    void *handle;
    bool opened;
};

static void *allocator_symbol(struct allocator_object *a, const char *name)
{
    struct roundtrim_symbol found;
    void *p;
    if (roundtrim_symbol_settled(roundtrim_tables_in_object(a->obj, name, &found), &found, &p))
        return p;
    if (!a->opened) {
        a->opened = true;
        roundtrim_dlerror_note();
        a->handle = dlopen(a->obj->main_program ? NULL : a->obj->path, RTLD_LAZY | RTLD_NOLOAD);
    }
    return a->handle ? dlsym(a->handle, name) : NULL;
}

/* The allocator is the one whose object defines the malloc the program's calls reach: ours,
 * forwarding to the next one, or one that comes before us. */
void roundtrim_allocator_detect(void)
{
    void *serving = (void *)roundtrim_next.malloc;
    void *first = first_malloc_definition();
    struct roundtrim_loaded_object first_obj, own, info;
    if (first && roundtrim_loaded_object_of(first, &first_obj) &&
        roundtrim_loaded_object_of((void *)roundtrim_allocator_detect, &own) &&
        !roundtrim_loaded_object_same(&first_obj, &own)) {
        serving = first;
        counts_skipped = RT_SKIP_allocator_before_roundtrim;
    }
    if (!roundtrim_loaded_object_of(serving, &info)) {
        strncpy(other_name, "unknown", sizeof other_name - 1);
        return;
    }
    struct allocator_object obj = {&info, NULL, false};
    bool libc = roundtrim_loaded_object_is_libc(&info);
    /* glibc has no mallctl: not asked there. */
    je_mallctl = libc ? NULL : (mallctl_fn)allocator_symbol(&obj, "mallctl");
    if (obj.opened && !obj.handle) {
        name_object(info.path);
        return;
    }
    if (je_mallctl) {
        kind = RT_ALLOC_JEMALLOC;
        /* Its own per-thread byte counters spare the hooks a size lookup per block: only when
         * our hooks forward to it, and not with sampling on, whose countdown runs on sizes. */
        if (!counts_skipped && !roundtrim_config()->sites)
            roundtrim_counters_use_jemalloc(je_mallctl);
    } else if (libc) {
        glibc_malloc_trim = (malloc_trim_fn)allocator_symbol(&obj, "malloc_trim");
        if (glibc_malloc_trim) {
            kind = RT_ALLOC_GLIBC;
            glibc_object = info; /* mallopt is looked up when a setting needs it */
        }
    }
    if (kind == RT_ALLOC_OTHER)
        name_object(info.path);
    if (obj.handle)
        dlclose(obj.handle);
}

enum roundtrim_skip roundtrim_allocator_counts_skipped(void)
{
    return counts_skipped;
}

enum roundtrim_allocator roundtrim_allocator_kind(void)
{
    return kind;
}

const char *roundtrim_allocator_name(void)
{
    switch (kind) {
    case RT_ALLOC_GLIBC:
        return "glibc";
    case RT_ALLOC_JEMALLOC:
        return "jemalloc";
    case RT_ALLOC_OTHER:
        break;
    }
    return other_name;
}

bool roundtrim_allocator_je_stats(struct roundtrim_je_stats *out)
{
    if (kind != RT_ALLOC_JEMALLOC)
        return false;
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    /* jemalloc's statistics are a snapshot refreshed by writing "epoch": counters merged, no
     * walk of the heap. */
    if (je_mallctl("epoch", &epoch, &len, &epoch, len) != 0)
        return false;
    size_t v[3] = {0, 0, 0};
    static const char *const names[3] = {"stats.allocated", "stats.resident", "stats.metadata"};
    for (int i = 0; i < 3; i++) {
        size_t vlen = sizeof v[i];
        if (je_mallctl(names[i], &v[i], &vlen, NULL, 0) != 0)
            return false;
    }
    out->allocated = v[0];
    out->resident = v[1];
    out->metadata = v[2];
    return true;
}

unsigned roundtrim_allocator_release(uint64_t *us)
{
    uint64_t t0 = roundtrim_now_us();
    unsigned action = 0;
    if (kind == RT_ALLOC_GLIBC) {
        glibc_malloc_trim(0);
        action = RT_ACT_TRIM;
    } else if (kind == RT_ALLOC_JEMALLOC) {
        /* 4096 is MALLCTL_ARENAS_ALL: every arena at once. */
        if (je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0)
            action = RT_ACT_PURGE;
    } else {
        static bool said;
        if (!said) {
            said = true;
            char line[400];
            snprintf(line, sizeof line,
                     "the allocator serving malloc (%s) is neither glibc nor jemalloc; cleanup "
                     "rounds return nothing from its heap",
                     other_name);
            roundtrim_warn(line);
        }
    }
    *us = roundtrim_now_us() - t0;
    return action;
}

const void *roundtrim_allocator_glibc_code(void)
{
    return kind == RT_ALLOC_GLIBC ? (const void *)glibc_malloc_trim : NULL;
}

void roundtrim_allocator_tune(const struct roundtrim_config *cfg)
{
    bool arenas = cfg->arena_max > 0 && cfg->setting[RT_OPT_ARENA_MAX].source != RT_FROM_GLIBC;
    bool threshold =
        cfg->mmap_threshold > 0 && cfg->setting[RT_OPT_MMAP_THRESHOLD].source != RT_FROM_GLIBC;
    if (kind != RT_ALLOC_GLIBC || !(arenas || threshold))
        return;
    struct allocator_object obj = {&glibc_object, NULL, false};
    mallopt_fn glibc_mallopt = (mallopt_fn)allocator_symbol(&obj, "mallopt");
    if (glibc_mallopt && arenas)
        glibc_mallopt(M_ARENA_MAX, (int)cfg->arena_max);
    /* Setting the threshold also stops glibc from raising it after each large free. */
    if (glibc_mallopt && threshold)
        glibc_mallopt(M_MMAP_THRESHOLD, (int)cfg->mmap_threshold);
    if (obj.handle)
        dlclose(obj.handle);
}

static uint64_t program_trims;

void roundtrim_program_trim_note(void)
{
    __atomic_add_fetch(&program_trims, 1, __ATOMIC_RELAXED);
}

uint64_t roundtrim_program_trim_count(void)
{
    return __atomic_load_n(&program_trims, __ATOMIC_RELAXED);
}
