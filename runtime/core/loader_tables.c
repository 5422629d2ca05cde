#include "runtime/core/loader_tables.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "runtime/core/env_scan.h"
#include "runtime/core/text.h"

/* The objects the tables describe: the caller's namespace from the executable up to the loader
 * itself, in the loader's order, the vDSO left out.
 *
 * Why that order is the search order: at start the loader loads the executable, the preloaded
 * objects and then the dependencies breadth first, appending each to its list as it goes, and its
 * global search list is built by the same walk; the loader's own entry is moved to its place in
 * that search list (glibc's rtld.c), and objects opened later are appended after all of them.
 * So every object before the loader's entry was loaded at start, at its place in the search. The
 * vDSO is listed (after the executable) but never searched. Filter objects (DT_FILTER,
 * DT_AUXILIARY) put their filtees before themselves in the search: with one of them the tables
 * are not used at all. */
#define MAX_OBJECTS 64 /* also the width of a bit set in roundtrim_tables_in_object */

/* The same fields in ELF32 and ELF64 symbols. */
#define SYM_TYPE(info)      ((info)&0xf)
#define SYM_BIND(info)      ((info) >> 4)
#define SYM_VISIBILITY(oth) ((oth)&0x3)

struct table {
    struct roundtrim_loaded_object obj;
    const ElfW(Phdr) * phdr;
    unsigned phnum;
    uintptr_t lo, hi; /* from the lowest to the end of the highest segment */
    const ElfW(Dyn) * dynamic;
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
    const ElfW(Half) * versym; /* NULL: no versions */
    const char *soname;        /* NULL: none */
    bool symbolic;             /* DT_SYMBOLIC: its own lookups search itself first */
    uint32_t nbuckets;         /* 0: no hash table, never searched */
    const uint32_t *buckets;
    bool gnu; /* a GNU hash table (the loader uses it first), else SysV */
    /* GNU hash */
    const ElfW(Addr) * bloom;
    uint32_t bloom_mask, bloom_shift, symoffset;
    const uint32_t *gnu_chain; /* indexed by symbol index - symoffset */
    /* SysV hash */
    const uint32_t *sysv_chain;
};

enum { UNBUILT, BUILDING, READY, UNUSABLE };
static int state = UNBUILT;
static struct table tables[MAX_OBJECTS];
static unsigned count;      /* the last one is the loader */
static unsigned self_index; /* this library */
static bool loader_last;    /* nothing followed the loader when the tables were built */
static unsigned long long adds_at_build;

/* What the loader was told at start that changes what dlsym answers or prints. */
static bool environment_allows(void)
{
    return !getauxval(AT_SECURE) && !roundtrim_env_scan()->loader_changed;
}

static bool maps(const ElfW(Phdr) * phdr, unsigned phnum, uintptr_t bias, uintptr_t addr,
                 uintptr_t len)
{
    for (unsigned i = 0; i < phnum; i++) {
        const ElfW(Phdr) *ph = &phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = bias + ph->p_vaddr;
        if (addr - start < ph->p_memsz && len <= ph->p_memsz - (addr - start))
            return true;
    }
    return false;
}

struct build {
    uintptr_t self_addr, loader_base;
    const ElfW(Phdr) * vdso_phdr;
    unsigned listed;
    bool self_seen, loader_seen, failed;
};

/* Whether [addr, addr + len) lies in [lo, hi). */
static bool within(uintptr_t lo, uintptr_t hi, uintptr_t addr, uintptr_t len)
{
    return addr >= lo && addr <= hi && len <= hi - addr;
}

/* Reads one object's dynamic section. False when it has anything the tables do not handle. */
static bool read_object(struct table *t, const struct dl_phdr_info *info, bool main_program)
{
    *t = (struct table){0};
    t->obj.path = info->dlpi_name ? info->dlpi_name : "";
    t->obj.bias = info->dlpi_addr;
    t->obj.main_program = main_program;
    t->phdr = info->dlpi_phdr;
    t->phnum = info->dlpi_phnum;
    uintptr_t bias = t->obj.bias, lo = UINTPTR_MAX, hi = 0;
    const ElfW(Phdr) *dyn_ph = NULL;
    for (unsigned i = 0; i < t->phnum; i++) {
        const ElfW(Phdr) *ph = &t->phdr[i];
        if (ph->p_type == PT_DYNAMIC) {
            dyn_ph = ph;
        } else if (ph->p_type == PT_LOAD) {
            uintptr_t start = bias + ph->p_vaddr;
            if (start < lo)
                lo = start;
            if (start + ph->p_memsz > hi)
                hi = start + ph->p_memsz;
        }
    }
    if (!dyn_ph || lo >= hi)
        return false;
    t->lo = lo;
    t->hi = hi;
    t->dynamic = (const ElfW(Dyn) *)(bias + dyn_ph->p_vaddr);
    /* The loader adds the load bias to the addresses of a writable dynamic section in place;
     * a read-only one keeps the link-time values. */
    uintptr_t add = (dyn_ph->p_flags & PF_W) ? 0 : bias;
    uintptr_t gnu_hash = 0, sysv_hash = 0, symtab = 0, strtab = 0, versym = 0, soname = 0;
    bool has_soname = false;
    for (const ElfW(Dyn) *d = t->dynamic; d->d_tag != DT_NULL; d++) {
        ElfW(Sxword) tag = d->d_tag;
        if (tag < DT_NUM) { /* the standard tags: a jump table */
            switch (tag) {
            case DT_HASH:
                sysv_hash = d->d_un.d_ptr + add;
                break;
            case DT_SYMTAB:
                symtab = d->d_un.d_ptr + add;
                break;
            case DT_STRTAB:
                strtab = d->d_un.d_ptr + add;
                break;
            case DT_STRSZ:
                t->strsz = d->d_un.d_val;
                break;
            case DT_SONAME:
                soname = d->d_un.d_val;
                has_soname = true;
                break;
            case DT_SYMBOLIC:
                t->symbolic = true;
                break;
            case DT_FLAGS:
                if (d->d_un.d_val & DF_SYMBOLIC)
                    t->symbolic = true;
                break;
            default:
                break;
            }
        } else if (tag == DT_GNU_HASH) {
            gnu_hash = d->d_un.d_ptr + add;
        } else if (tag == DT_VERSYM) {
            versym = d->d_un.d_ptr + add;
        } else if (tag == DT_FILTER || tag == DT_AUXILIARY || tag == DT_AUDIT ||
                   tag == DT_DEPAUDIT) {
            return false;
        }
    }
    if (!within(lo, hi, strtab, t->strsz) || !t->strsz ||
        !within(lo, hi, symtab, sizeof(ElfW(Sym))))
        return false;
    t->symtab = (const ElfW(Sym) *)symtab;
    t->strtab = (const char *)strtab;
    if (versym) {
        if (!within(lo, hi, versym, sizeof(ElfW(Half))))
            return false;
        t->versym = (const ElfW(Half) *)versym;
    }
    if (has_soname) {
        if (soname >= t->strsz)
            return false;
        t->soname = t->strtab + soname;
    }
    if (gnu_hash) {
        if (!within(lo, hi, gnu_hash, 4 * sizeof(uint32_t)))
            return false;
        const uint32_t *h = (const uint32_t *)gnu_hash;
        uint32_t bloom_words = h[2];
        if (bloom_words == 0 || (bloom_words & (bloom_words - 1)) != 0)
            return false;
        t->gnu = true;
        t->nbuckets = h[0];
        t->symoffset = h[1];
        t->bloom_mask = bloom_words - 1;
        t->bloom_shift = h[3];
        t->bloom = (const ElfW(Addr) *)(h + 4);
        t->buckets = (const uint32_t *)(t->bloom + bloom_words);
        t->gnu_chain = t->buckets + t->nbuckets;
        if (!within(lo, hi, (uintptr_t)t->bloom,
                    bloom_words * sizeof(ElfW(Addr)) + t->nbuckets * sizeof(uint32_t)))
            return false;
    } else if (sysv_hash) {
        if (!within(lo, hi, sysv_hash, 2 * sizeof(uint32_t)))
            return false;
        const uint32_t *h = (const uint32_t *)sysv_hash;
        t->nbuckets = h[0];
        t->buckets = h + 2;
        t->sysv_chain = t->buckets + t->nbuckets;
        if (!within(lo, hi, (uintptr_t)t->buckets,
                    ((uintptr_t)t->nbuckets + h[1]) * sizeof(uint32_t)))
            return false;
    }
    return true;
}

/* Whether an object is a filter (DT_FILTER, DT_AUXILIARY); true where its dynamic section cannot
 * be found. */
static bool has_filter(const struct dl_phdr_info *info)
{
    const ElfW(Phdr) *dyn_ph = NULL;
    for (unsigned i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn_ph = &info->dlpi_phdr[i];
    if (!dyn_ph)
        return true;
    for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + dyn_ph->p_vaddr);
         d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_FILTER || d->d_tag == DT_AUXILIARY)
            return true;
    return false;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct build *b = arg;
    if (size < offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds) {
        b->failed = true;
        return 1;
    }
    adds_at_build = info->dlpi_adds;
    if (b->loader_seen) { /* something follows the loader: opened later, or loaded after it */
        loader_last = false;
        /* A filter anywhere: each search list the loader builds that reaches it (one for a
         * dlopen of an object loaded at start, too) moves its filtee to just before it in the
         * list of objects, so that list's order is no longer the global search order. */
        if (has_filter(info)) {
            b->failed = true;
            return 1;
        }
        return 0;
    }
    bool main_program = b->listed++ == 0; /* the loader lists the executable first */
    if (info->dlpi_phdr == b->vdso_phdr)
        return 0;
    if (count == MAX_OBJECTS || !read_object(&tables[count], info, main_program)) {
        b->failed = true;
        return 1;
    }
    /* Inside one of its segments, not merely its span: the kernel maps the loader itself
     * segment by segment, and another object may lie in the gap between two (glibc 2.27's
     * ld.so, aligned to 2 MiB, has this library there). */
    if (maps(tables[count].phdr, tables[count].phnum, tables[count].obj.bias, b->self_addr, 1)) {
        /* RTLD_DEFAULT from an object linked -Bsymbolic searches that object first. */
        if (tables[count].symbolic) {
            b->failed = true;
            return 1;
        }
        b->self_seen = true;
        self_index = count;
    }
    if (info->dlpi_addr == b->loader_base) {
        /* The loader before this library: this library was opened after the start. */
        if (!b->self_seen) {
            b->failed = true;
            return 1;
        }
        b->loader_seen = true;
        loader_last = true;
    }
    count++;
    return 0;
}

static bool build(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
    struct build b = {0};
    b.self_addr = (uintptr_t)(void *)build;
    b.loader_base = getauxval(AT_BASE);
    uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
    if (vdso)
        b.vdso_phdr = (const ElfW(Phdr) *)(vdso + ((const ElfW(Ehdr) *)vdso)->e_phoff);
    if (!b.loader_base || !environment_allows())
        return false;
    count = 0;
    dl_iterate_phdr(collect, &b);
    /* The executable's own DT_AUDIT, DT_DEPAUDIT or a filter made read_object fail. */
    return !b.failed && b.self_seen && b.loader_seen;
#else
    /* Elsewhere the loader may keep the dynamic section read-only and unrelocated, and symbols
     * may match by machine rules of their own: always ask it. */
    return false;
#endif
}

static bool ready(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == READY)
        return true;
    if (s != UNBUILT)
        return false; /* unusable, or another thread is building: ask the loader meanwhile */
    if (!__atomic_compare_exchange_n(&state, &s, BUILDING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    s = build() ? READY : UNUSABLE;
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    return s == READY;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1;
}

/* A name found nowhere up to the loader is found nowhere only when no object followed it then
 * and none was loaded since. */
static enum roundtrim_symbol_answer absent_or_ask(void)
{
    if (!loader_last)
        return RT_SYM_ASK_LOADER;
    unsigned long long adds = 0;
    dl_iterate_phdr(read_adds, &adds);
    return adds == adds_at_build ? RT_SYM_ABSENT : RT_SYM_ASK_LOADER;
}

struct query {
    const char *name;
    uint32_t gnu_hash, sysv_hash;
    bool sysv_done;
    /* RTLD_NEXT: glibc 2.36 made it prefer an object's default version, as dlsym(handle) and
     * RTLD_DEFAULT do; before, the object's first version matched at once (a name with an old
     * compatibility version, pthread_cond_wait, got the old one). An answer is given only where
     * both rules agree. */
    bool either_rule;
};
static struct query query_for(const char *name, bool either_rule)
{
    uint32_t h = 5381;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        h = h * 33 + *s;
    return (struct query){name, h, 0, false, either_rule};
}

static uint32_t sysv_hash_of(struct query *q)
{
    if (!q->sysv_done) {
        uint32_t h = 0;
        for (const unsigned char *s = (const unsigned char *)q->name; *s; s++) {
            h = (h << 4) + *s;
            uint32_t g = h & 0xf0000000u;
            if (g)
                h ^= g >> 24;
            h &= ~g;
        }
        q->sysv_hash = h;
        q->sysv_done = true;
    }
    return q->sysv_hash;
}

#define ALLOWED_TYPES                                                                              \
    ((1u << STT_NOTYPE) | (1u << STT_OBJECT) | (1u << STT_FUNC) | (1u << STT_COMMON) |             \
     (1u << STT_TLS) | (1u << STT_GNU_IFUNC))

/* What the loader's check of one entry found (glibc's check_match, for a lookup without a
 * version): NULL for an entry that does not match. For a lookup that prefers the default version
 * (2.36 and later for RTLD_NEXT, always for the others), a match of the object's base version
 * (index 0 or 1) is taken at once, others are counted and the one not hidden is chosen; the older
 * RTLD_NEXT rule also takes the first version (index 2) at once. */
struct choice {
    const ElfW(Sym) * now;       /* taken at once */
    const ElfW(Sym) * versioned; /* the one default (not hidden) version seen */
    unsigned versions;
};

static bool entry_matches(const struct table *t, uint32_t idx, const struct query *q)
{
    const ElfW(Sym) *sym = &t->symtab[idx];
    unsigned type = SYM_TYPE(sym->st_info);
    if (sym->st_value == 0 && sym->st_shndx != SHN_ABS && type != STT_TLS)
        return false;
    if (!((1u << type) & ALLOWED_TYPES))
        return false;
    return sym->st_name < t->strsz && roundtrim_same_string(t->strtab + sym->st_name, q->name);
}

/* Notes a matching entry under one rule; true when that rule takes it at once. */
static bool choose(struct choice *c, const ElfW(Sym) * sym, unsigned version, unsigned from)
{
    if ((version & 0x7fffu) < from) {
        c->now = sym;
        return true;
    }
    if (!(version & 0x8000u) && c->versions++ == 0)
        c->versioned = sym;
    return false;
}

static const ElfW(Sym) * chosen(const struct choice *c)
{
    return c->now ? c->now : c->versions == 1 ? c->versioned : NULL;
}

enum pick { PICK_NONE, PICK_FOUND, PICK_LOADER };

/* What the loader makes of the entry an object's lookup chose (the end of glibc's do_lookup_x
 * and do_sym). */
static enum pick finish(const struct table *t, const ElfW(Sym) * sym, struct roundtrim_symbol *out)
{
    if (!sym)
        return PICK_NONE;
    unsigned visibility = SYM_VISIBILITY(sym->st_other);
    if (visibility == STV_HIDDEN || visibility == STV_INTERNAL)
        return PICK_NONE;
    switch (SYM_BIND(sym->st_info)) {
    case STB_GLOBAL:
    case STB_WEAK:
        break;
    case STB_GNU_UNIQUE: /* the loader keeps one definition for the whole process */
        return PICK_LOADER;
    default:
        return PICK_NONE;
    }
    unsigned type = SYM_TYPE(sym->st_info);
    if (type == STT_TLS || type == STT_GNU_IFUNC || sym->st_shndx == SHN_ABS)
        return PICK_LOADER;
    out->addr = (void *)(t->obj.bias + sym->st_value);
    out->sym = sym;
    out->where = t->obj;
    return PICK_FOUND;
}

/* One object's answer (glibc's do_lookup_x for one object). */
static enum pick find_in(const struct table *t, struct query *q, struct roundtrim_symbol *out)
{
    struct choice newest = {0}, first = {0};
    bool done_newest = false, done_first = !q->either_rule;
    if (t->nbuckets == 0)
        return PICK_NONE;
    uint32_t idx, end_bit = 0;
    if (t->gnu) {
        const unsigned bits = 8 * sizeof(ElfW(Addr));
        ElfW(Addr) word = t->bloom[(q->gnu_hash / bits) & t->bloom_mask];
        unsigned bit1 = q->gnu_hash & (bits - 1),
                 bit2 = (q->gnu_hash >> t->bloom_shift) & (bits - 1);
        if (!((word >> bit1) & (word >> bit2) & 1))
            return PICK_NONE;
        idx = t->buckets[q->gnu_hash % t->nbuckets];
        if (idx == 0 || idx < t->symoffset)
            return PICK_NONE;
    } else {
        idx = t->buckets[sysv_hash_of(q) % t->nbuckets];
    }
    /* Both chains in the loader's order; a rule is done when it takes an entry at once. */
    while (!(done_newest && done_first)) {
        if (t->gnu) {
            uint32_t h = t->gnu_chain[idx - t->symoffset];
            end_bit = h & 1;
            if (((h ^ q->gnu_hash) >> 1) != 0)
                goto next;
        } else if (idx == STN_UNDEF) {
            break;
        }
        if (entry_matches(t, idx, q)) {
            const ElfW(Sym) *sym = &t->symtab[idx];
            unsigned version = t->versym ? t->versym[idx] : 0;
            if (!done_newest)
                done_newest = choose(&newest, sym, version, 2);
            if (!done_first)
                done_first = choose(&first, sym, version, 3);
        }
    next:
        if (t->gnu) {
            if (end_bit)
                break;
            idx++;
        } else {
            idx = t->sysv_chain[idx];
        }
    }
    const ElfW(Sym) *sym = chosen(&newest), *old_rule = chosen(&first);
    enum pick pick = finish(t, sym, out);
    /* The two RTLD_NEXT rules disagree on the entry: fine when both give the same answer (a
     * compatibility version that is an alias of the default one, as pthread_create@GLIBC_2.2.5
     * of pthread_create@@GLIBC_2.34). */
    if (q->either_rule && old_rule != sym) {
        struct roundtrim_symbol other;
        if (finish(t, old_rule, &other) != pick || (pick == PICK_FOUND && other.addr != out->addr))
            return PICK_LOADER;
    }
    return pick;
}

/* Whether one object's pick ends the search, and with which answer. */
static bool decided(enum pick pick, enum roundtrim_symbol_answer *a)
{
    *a = pick == PICK_FOUND ? RT_SYM_FOUND : RT_SYM_ASK_LOADER;
    return pick != PICK_NONE;
}

/* The first answer among tables[from..to). */
static enum roundtrim_symbol_answer search(unsigned from, unsigned to, struct query *q,
                                           struct roundtrim_symbol *out)
{
    enum roundtrim_symbol_answer a;
    for (unsigned i = from; i < to; i++)
        if (decided(find_in(&tables[i], q, out), &a))
            return a;
    return absent_or_ask();
}

enum roundtrim_symbol_answer roundtrim_tables_next(const char *name, struct roundtrim_symbol *out)
{
    if (!ready())
        return RT_SYM_ASK_LOADER;
    struct query q = query_for(name, true);
    return search(self_index + 1, count, &q, out);
}

enum roundtrim_symbol_answer roundtrim_tables_default(const char *name,
                                                      struct roundtrim_symbol *out)
{
    if (!ready())
        return RT_SYM_ASK_LOADER;
    struct query q = query_for(name, false);
    return search(0, count, &q, out);
}

enum roundtrim_symbol_answer roundtrim_tables_first_after_main(const char *name,
                                                               struct roundtrim_symbol *out)
{
    if (!ready())
        return RT_SYM_ASK_LOADER;
    /* Up to the loader, whose own handle finds nothing in glibc (its scope is empty): the loader
     * answers the rest. */
    struct query q = query_for(name, false);
    enum roundtrim_symbol_answer a = search(1, count - 1, &q, out);
    return a == RT_SYM_FOUND ? a : RT_SYM_ASK_LOADER;
}

/* The object loaded for a DT_NEEDED name: the one whose DT_SONAME it is, when exactly one is. */
static int needed_object(const char *name)
{
    if (roundtrim_contains(name, "/"))
        return -1;
    int found = -1;
    for (unsigned i = 0; i < count; i++) {
        if (tables[i].soname && roundtrim_same_string(tables[i].soname, name)) {
            if (found >= 0)
                return -1;
            found = (int)i;
        }
    }
    return found;
}

enum roundtrim_symbol_answer roundtrim_tables_in_object(const struct roundtrim_loaded_object *obj,
                                                        const char *name,
                                                        struct roundtrim_symbol *out)
{
    if (!ready() || obj->main_program)
        return RT_SYM_ASK_LOADER;
    int start = -1;
    for (unsigned i = 0; i < count && start < 0; i++)
        if (tables[i].obj.bias == obj->bias && roundtrim_loaded_object_same(&tables[i].obj, obj))
            start = (int)i;
    if (start < 0 || (unsigned)start == count - 1) /* the loader's own handle: ask it */
        return RT_SYM_ASK_LOADER;
    /* The handle's scope: the object, then its dependencies breadth first, each once. */
    unsigned order[MAX_OBJECTS], n = 0;
    uint64_t queued = (uint64_t)1 << start; /* MAX_OBJECTS is 64 */
    order[n++] = (unsigned)start;
    struct query q = query_for(name, false);
    for (unsigned k = 0; k < n; k++) {
        const struct table *t = &tables[order[k]];
        enum roundtrim_symbol_answer a;
        if (decided(find_in(t, &q, out), &a))
            return a;
        for (const ElfW(Dyn) *d = t->dynamic; d->d_tag != DT_NULL; d++) {
            if (d->d_tag != DT_NEEDED)
                continue;
            if (d->d_un.d_val >= t->strsz)
                return RT_SYM_ASK_LOADER;
            int dep = needed_object(t->strtab + d->d_un.d_val);
            if (dep < 0)
                return RT_SYM_ASK_LOADER;
            if (!(queued & ((uint64_t)1 << dep))) {
                queued |= (uint64_t)1 << dep;
                order[n++] = (unsigned)dep;
            }
        }
    }
    return RT_SYM_ABSENT;
}

enum roundtrim_symbol_answer roundtrim_tables_own_definition(const struct dl_phdr_info *info,
                                                             const char *name,
                                                             struct roundtrim_symbol *out)
{
    struct table t;
    if (!read_object(&t, info, false))
        return RT_SYM_ASK_LOADER;
    struct query q = query_for(name, false);
    enum roundtrim_symbol_answer a;
    return decided(find_in(&t, &q, out), &a) ? a : RT_SYM_ABSENT;
}

const char *roundtrim_tables_soname(const struct dl_phdr_info *info)
{
    struct table t;
    return read_object(&t, info, false) ? t.soname : NULL;
}

const char *roundtrim_tables_needed(const struct dl_phdr_info *info, unsigned k)
{
    struct table t;
    if (!read_object(&t, info, false))
        return NULL;
    for (const ElfW(Dyn) *d = t.dynamic; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_NEEDED && k-- == 0)
            return d->d_un.d_val < t.strsz ? t.strtab + d->d_un.d_val : NULL;
    return NULL;
}

bool roundtrim_tables_owner(const void *addr, struct roundtrim_loaded_object *out)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != READY)
        return false;
    uintptr_t a = (uintptr_t)addr;
    for (unsigned i = 0; i < count; i++) {
        if (a >= tables[i].lo && a < tables[i].hi &&
            maps(tables[i].phdr, tables[i].phnum, tables[i].obj.bias, a, 1)) {
            *out = tables[i].obj;
            return true;
        }
    }
    return false;
}
