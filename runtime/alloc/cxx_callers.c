#include "runtime/alloc/cxx_callers.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>

#include "runtime/core/real_dlsym.h"

/* Records are only ever added (a reader may hold one at any time); one for a library whose
 * range was reused is refreshed in place when the answer for its new occupant is the same, so
 * a host that closes and opens its plugins again does not fill the table. Past its end, calls
 * from libraries without a record are answered afresh each time: correct, and slow. */
#define CALLERS_MAX 256
/* Different answers: one per C++ runtime and allocator a process mixes. */
#define BINDINGS_MAX 32

const struct roundtrim_cxx_binding *roundtrim_cxx_everyone;

static bool decided;
static struct roundtrim_cxx_binding bindings[BINDINGS_MAX];
static unsigned binding_count;
static struct roundtrim_cxx_caller callers[CALLERS_MAX];
static unsigned caller_count;
static const struct roundtrim_cxx_binding nothing;   /* no C++ runtime is loaded */
static uint64_t nothing_at = UINT64_MAX;             /* the loader's additions when that was so */
static const struct roundtrim_cxx_binding *unplaced; /* for code outside every object */
__thread const struct roundtrim_cxx_caller *roundtrim_cxx_last;
/* The return address in code outside every object this thread called from last: JIT code calls
 * from a few places, many times. Its answer is always good (held), so a JIT region freed and
 * reused by a library could at worst give that library the first runtime's operators. */
static __thread const void *last_unplaced;

/* Guards the additions to both tables and the records' references: held only for copying and
 * for asking which object maps an address (lock-free, or under the loader's list lock, which no
 * thread holds while calling operator new), never across dlopen or dlclose (a thread holding the
 * loader's main lock may be in operator new too). */
static int table_lock;

static void lock_tables(void)
{
    while (__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void unlock_tables(void)
{
    __atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

/* A thread that held the lock at the fork is not in the child; what it was copying was not
 * published yet. */
void roundtrim_cxx_callers_fork_child(void)
{
    __atomic_store_n(&table_lock, 0, __ATOMIC_RELAXED);
}

static bool same_binding(const struct roundtrim_cxx_binding *a,
                         const struct roundtrim_cxx_binding *b)
{
    for (int i = 0; i < ROUNDTRIM_CXX_NAMES_MAX; i++)
        if (a->op[i] != b->op[i])
            return false;
    return a->counts_here == b->counts_here;
}

/* The table's copy of b (locked). With the table full, the first answer stands in. */
static const struct roundtrim_cxx_binding *intern(const struct roundtrim_cxx_binding *b)
{
    unsigned n = binding_count;
    for (unsigned i = 0; i < n; i++)
        if (same_binding(&bindings[i], b))
            return &bindings[i];
    if (n == BINDINGS_MAX)
        return &bindings[0];
    bindings[n] = *b;
    __atomic_store_n(&binding_count, n + 1, __ATOMIC_RELEASE);
    return &bindings[n];
}

struct span_search {
    uintptr_t addr, start, end;
    bool found;
};

static int find_span(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct span_search *s = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    bool maps = false;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        maps |= s->addr - start < ph->p_memsz;
        lo = start < lo ? start : lo;
        hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
    }
    if (!maps)
        return 0;
    s->start = lo;
    s->end = hi;
    s->found = true;
    return 1;
}

#ifdef DLFO_STRUCT_HAS_EH_DBASE
typedef int (*find_object_fn)(void *, struct dl_find_object *);
static find_object_fn find_object;
static bool find_object_looked_up;
#endif

/* The span of the loaded object that maps caller; false for code outside every object (a JIT's).
 * glibc 2.35's _dl_find_object answers without the loader's lock and in a few nanoseconds, which
 * matters for such code (it comes here at every call); elsewhere the loader's list is walked. */
static bool span_of(const void *caller, uintptr_t *start, uintptr_t *span)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    if (!__atomic_load_n(&find_object_looked_up, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&find_object, (find_object_fn)roundtrim_default_symbol("_dl_find_object"),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&find_object_looked_up, true, __ATOMIC_RELEASE);
    }
    find_object_fn fn = __atomic_load_n(&find_object, __ATOMIC_RELAXED);
    if (fn) {
        struct dl_find_object fo;
        if (fn((void *)caller, &fo) != 0)
            return false;
        *start = (uintptr_t)fo.dlfo_map_start;
        *span = (uintptr_t)fo.dlfo_map_end - *start;
        return true;
    }
#endif
    struct span_search s = {(uintptr_t)caller, 0, 0, false};
    dl_iterate_phdr(find_span, &s);
    *start = s.start;
    *span = s.end - s.start;
    return s.found;
}

/* Remembers b for the library at [start, start + span), with the loader reference taken for it.
 * When an unload began or ended since done was read, the library found may be another: the
 * record is kept for its reference (given back once nothing maps start) but never matches. */
static void remember(uintptr_t start, uintptr_t span, const struct roundtrim_cxx_binding *b,
                     void *held, bool steady, uint64_t done)
{
    uint64_t now;
    if (!steady || !roundtrim_unloads_settled(&now) || now != done)
        done = UINT64_MAX;
    void *spare = NULL;
    lock_tables();
    unsigned n = caller_count;
    struct roundtrim_cxx_caller *c = NULL;
    for (unsigned i = 0; i < n && !c; i++)
        if (callers[i].start == start && callers[i].span == span && callers[i].binding == b)
            c = &callers[i];
    if (c) {
        void *none = NULL; /* the library's record may have given its reference back */
        if (held && !__atomic_compare_exchange_n(&c->held, &none, held, false, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
            spare = held;
        __atomic_store_n(&c->unloads, done, __ATOMIC_RELEASE);
    } else if (n < CALLERS_MAX) {
        c = &callers[n];
        *c = (struct roundtrim_cxx_caller){start, span, done, b, held};
        __atomic_store_n(&caller_count, n + 1, __ATOMIC_RELEASE);
    }
    unlock_tables();
    if (spare)
        dlclose(spare);
    if (c)
        roundtrim_cxx_last = c;
}

/* Code outside every loaded object (a JIT's) has no scope of its own: it gets the first runtime
 * found, held loaded (runtime/alloc/cxx_runtime.h), so that the answer stays good for good. */
static const struct roundtrim_cxx_binding *unplaced_binding(const char *const names[], int count)
{
    const struct roundtrim_cxx_binding *u = __atomic_load_n(&unplaced, __ATOMIC_ACQUIRE);
    if (u)
        return u;
    uint64_t adds = roundtrim_loaded_objects_added();
    if (adds == __atomic_load_n(&nothing_at, __ATOMIC_RELAXED))
        return &nothing;
    struct roundtrim_cxx_binding fresh;
    if (!roundtrim_cxx_runtime_find(names, count, &fresh)) {
        __atomic_store_n(&nothing_at, adds, __ATOMIC_RELAXED);
        return &nothing;
    }
    lock_tables();
    u = intern(&fresh);
    __atomic_store_n(&unplaced, u, __ATOMIC_RELEASE);
    unlock_tables();
    return u;
}

/* The first call decides whether one answer serves every caller. */
static void decide(const char *const names[], int count)
{
    struct roundtrim_cxx_binding b;
    bool everyone = roundtrim_cxx_runtime_for_everyone(names, count, &b);
    lock_tables();
    if (!__atomic_load_n(&decided, __ATOMIC_RELAXED)) {
        if (everyone)
            __atomic_store_n(&roundtrim_cxx_everyone, intern(&b), __ATOMIC_RELEASE);
        __atomic_store_n(&decided, true, __ATOMIC_RELEASE);
    }
    unlock_tables();
}

static const struct roundtrim_cxx_binding *resolve(const void *caller, const char *const names[],
                                                   int count, bool steady, uint64_t done)
{
    uintptr_t start, span;
    if (!span_of(caller, &start, &span)) {
        const struct roundtrim_cxx_binding *u = unplaced_binding(names, count);
        last_unplaced = u != &nothing ? caller : NULL;
        return u;
    }
    uint64_t adds = roundtrim_loaded_objects_added();
    if (adds == __atomic_load_n(&nothing_at, __ATOMIC_RELAXED))
        return &nothing;
    struct roundtrim_cxx_binding fresh;
    void *held;
    if (!roundtrim_cxx_runtime_for_caller(caller, names, count, &fresh, &held)) {
        __atomic_store_n(&nothing_at, adds, __ATOMIC_RELAXED);
        return &nothing;
    }
    lock_tables();
    const struct roundtrim_cxx_binding *b = intern(&fresh);
    unlock_tables();
    remember(start, span, b, held, steady, done);
    return b;
}

void roundtrim_cxx_callers_release_unloaded(void)
{
    unsigned n = __atomic_load_n(&caller_count, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        if (!__atomic_load_n(&callers[i].held, __ATOMIC_ACQUIRE))
            continue;
        /* Under the lock: a library mapped at the same place since cannot have handed its own
         * reference to this record meanwhile (remember() does so under the lock). */
        uintptr_t start, span;
        void *held = NULL;
        lock_tables();
        if (!span_of((const void *)callers[i].start, &start, &span))
            held = __atomic_exchange_n(&callers[i].held, NULL, __ATOMIC_ACQ_REL);
        unlock_tables();
        if (held)
            dlclose(held);
    }
}

static inline bool hit(const struct roundtrim_cxx_caller *c, uintptr_t addr, uint64_t done)
{
    return addr - c->start < c->span && __atomic_load_n(&c->unloads, __ATOMIC_ACQUIRE) == done;
}

const struct roundtrim_cxx_binding *
roundtrim_cxx_binding_of_caller(const void *caller, const char *const names[], int count)
{
    if (__builtin_expect(!__atomic_load_n(&decided, __ATOMIC_ACQUIRE), 0)) {
        decide(names, count);
        const struct roundtrim_cxx_binding *b =
            __atomic_load_n(&roundtrim_cxx_everyone, __ATOMIC_ACQUIRE);
        if (b)
            return b;
    }
    if (caller == last_unplaced)
        return __atomic_load_n(&unplaced, __ATOMIC_ACQUIRE);
    uint64_t done = 0;
    bool steady = roundtrim_unloads_settled(&done);
    uintptr_t addr = (uintptr_t)caller;
    if (steady) {
        unsigned n = __atomic_load_n(&caller_count, __ATOMIC_ACQUIRE);
        for (unsigned i = 0; i < n; i++) {
            if (hit(&callers[i], addr, done)) {
                roundtrim_cxx_last = &callers[i];
                return callers[i].binding;
            }
        }
    }
    return resolve(caller, names, count, steady, done);
}
