#include "runtime/sites/site_table.h"

#include <sched.h>
#include <string.h>

#include "runtime/python/frames.h"
#include "runtime/core/hash.h"
#include "runtime/core/pages.h"

#define CODE_NAMES_MAX 4096u

/* An entry's id: a hash of frames (at least ID_FIRST), or one of these. */
#define ID_EMPTY 0u /* never taken: ends a lookup */
#define ID_GONE  1u /* given back: lookups go on past it, a claim may take it again */
#define ID_FIRST 2u

static struct roundtrim_site *sites;
static uint32_t stacks_taken, lines_taken;
static struct roundtrim_code_names *code_names;
/* Held while an entry is claimed or given back: short (a copy of frames), taken with a bounded
 * try by allocating threads, which then go without a site rather than wait. */
static int claim_lock;

bool roundtrim_site_table_init(void)
{
    sites = roundtrim_pages_map(sizeof *sites * ROUNDTRIM_SITES_MAX);
    code_names = roundtrim_pages_map(sizeof *code_names * CODE_NAMES_MAX);
    return sites && code_names;
}

static uint64_t as_id(uint64_t h)
{
    return h < ID_FIRST ? h + ID_FIRST : h;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static bool claim_lock_take(void)
{
    for (int n = 0; n < 256; n++) {
        if (!__atomic_exchange_n(&claim_lock, 1, __ATOMIC_ACQUIRE))
            return true;
        if (n < 64)
            cpu_relax();
        else
            sched_yield(); /* the holder may have been preempted */
    }
    return false;
}

static void claim_lock_drop(void)
{
    __atomic_store_n(&claim_lock, 0, __ATOMIC_RELEASE);
}

static uint64_t frames_id(const uintptr_t *frames, int depth, const struct roundtrim_site_py *py,
                          int py_depth)
{
    uint64_t h = ROUNDTRIM_HASH_START;
    for (int i = 0; i < depth; i++)
        h = roundtrim_hash_mix(h, frames[i]);
    for (int i = 0; i < py_depth; i++)
        h = roundtrim_hash_mix(roundtrim_hash_mix(h, (uintptr_t)py[i].code),
                               (uint64_t)(uint32_t)py[i].line << 32 | py[i].names_key);
    h ^= h >> 29;
    return as_id(h);
}

/* The entry holding id in entries [base, base + size), or -1. */
static int32_t find(uint64_t id, uint32_t base, uint32_t size)
{
    uint32_t i = (uint32_t)(id % size);
    for (uint32_t n = 0; n < size; n++, i = i + 1 == size ? 0 : i + 1) {
        uint64_t k = __atomic_load_n(&sites[base + i].id, __ATOMIC_ACQUIRE);
        if (k == id)
            return (int32_t)(base + i);
        if (k == ID_EMPTY)
            return -1;
    }
    return -1;
}

/* find, with the entry pinned. The pin is made before the id is read again: the worker, which
 * gives an entry back by changing its id first and reading the pins after, sees the pin or this
 * thread sees the change (both sequentially consistent). */
static int32_t find_pinned(uint64_t id, uint32_t base, uint32_t size)
{
    for (int tries = 0; tries < 4; tries++) {
        int32_t i = find(id, base, size);
        if (i < 0)
            return -1;
        __atomic_add_fetch(&sites[i].pins, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sites[i].id, __ATOMIC_SEQ_CST) == id)
            return i;
        __atomic_sub_fetch(&sites[i].pins, 1, __ATOMIC_RELEASE);
    }
    return -1;
}

/* Writes a new site into entry s (free or given back; claim lock held), pinned, then publishes
 * its id. */
static void fill(struct roundtrim_site *s, uint64_t id, const uintptr_t *frames, int depth,
                 const struct roundtrim_site_py *py, int py_depth, enum roundtrim_site_kind kind)
{
    __atomic_store_n(&s->alloc_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->free_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->samples, 0, __ATOMIC_RELAXED);
    /* Added, not stored: a lookup that found the entry's old id may hold a pin on it until it
     * reads the id again (and keeps it, when the new id is the same stack's). */
    __atomic_add_fetch(&s->pins, 1, __ATOMIC_SEQ_CST);
    s->kind = (uint8_t)kind;
    s->depth = (uint8_t)depth;
    s->py_depth = (uint8_t)py_depth;
    if (depth > 0)
        memcpy(s->frames, frames, sizeof *frames * (size_t)depth);
    if (py_depth > 0)
        memcpy(s->py, py, sizeof *py * (size_t)py_depth);
    if (kind == RT_SITE_STACK)
        __atomic_add_fetch(&stacks_taken, 1, __ATOMIC_RELAXED);
    else if (kind == RT_SITE_LINE)
        __atomic_add_fetch(&lines_taken, 1, __ATOMIC_RELAXED);
    /* Whole before it can be found: a thread that finds it reads it at once. */
    __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
}

#define PROBE_FULL -1 /* every entry of the probe sequence is another's */
#define PROBE_BUSY -2 /* the claim lock was not had: the site may be new, or not */

/* The site of id in entries [base, base + size), pinned, created if new with these frames in
 * the first free or given-back entry of its probe sequence; else PROBE_FULL or PROBE_BUSY. */
static int32_t probe(uint64_t id, uint32_t base, uint32_t size, const uintptr_t *frames, int depth,
                     const struct roundtrim_site_py *py, int py_depth,
                     enum roundtrim_site_kind kind)
{
    int32_t found = find_pinned(id, base, size);
    if (found >= 0)
        return found;
    if (!claim_lock_take())
        return PROBE_BUSY;
    /* Under the lock no entry is claimed or given back by another: look again (another thread
     * may have just created this site), then take the first reusable entry. */
    found = find(id, base, size);
    if (found >= 0) {
        __atomic_add_fetch(&sites[found].pins, 1, __ATOMIC_SEQ_CST);
        claim_lock_drop();
        return found;
    }
    found = PROBE_FULL;
    uint32_t i = (uint32_t)(id % size);
    for (uint32_t n = 0; n < size; n++, i = i + 1 == size ? 0 : i + 1) {
        uint64_t k = __atomic_load_n(&sites[base + i].id, __ATOMIC_ACQUIRE);
        if (k == ID_EMPTY || k == ID_GONE) {
            fill(&sites[base + i], id, frames, depth, py, py_depth, kind);
            found = (int32_t)(base + i);
            break;
        }
    }
    claim_lock_drop();
    return found;
}

/* A line's key: the innermost Python frame, else the innermost native frames (at most 4), in
 * another hash than a whole stack's. */
static uint64_t line_id(const uintptr_t *frames, int depth, const struct roundtrim_site_py *py,
                        int py_depth)
{
    uint64_t h = roundtrim_hash_mix(ROUNDTRIM_HASH_START, 0x6c696e65u); /* "line" */
    if (py_depth > 0)
        h = roundtrim_hash_mix(roundtrim_hash_mix(h, (uintptr_t)py[0].code),
                               (uint64_t)(uint32_t)py[0].line << 32 | py[0].names_key);
    else
        for (int i = 0; i < depth && i < 4; i++)
            h = roundtrim_hash_mix(h, frames[i]);
    h ^= h >> 29;
    return as_id(h);
}

int32_t roundtrim_site_intern(const uintptr_t *frames, int depth,
                              const struct roundtrim_site_py *py, int py_depth)
{
    if (!sites)
        return -1;
    int32_t i = probe(frames_id(frames, depth, py, py_depth), 0, ROUNDTRIM_SITES_MAIN, frames,
                      depth, py, py_depth, RT_SITE_STACK);
    /* Only a full table sends a stack to its line: one whose site was busy being claimed may
     * have it a moment later, and would then be counted at two sites. */
    if (i != PROBE_FULL)
        return i < 0 ? -1 : i;
    i = probe(line_id(frames, depth, py, py_depth), ROUNDTRIM_SITES_MAIN, ROUNDTRIM_SITES_LINE,
              frames, depth, py, py_depth, RT_SITE_LINE);
    return i < 0 ? -1 : i;
}

void roundtrim_site_unpin(int32_t site)
{
    if (site >= 0 && (uint32_t)site < ROUNDTRIM_SITES_MAX)
        __atomic_sub_fetch(&sites[site].pins, 1, __ATOMIC_RELEASE);
}

bool roundtrim_site_give_back(uint32_t i)
{
    if (!sites || i >= ROUNDTRIM_SITES_MAX)
        return false;
    struct roundtrim_site *s = &sites[i];
    uint64_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
    if (id < ID_FIRST || !claim_lock_take())
        return false;
    bool gone = false;
    if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) == id && s->kind != RT_SITE_START) {
        __atomic_store_n(&s->id, ID_GONE, __ATOMIC_SEQ_CST);
        /* No pin: no thread found the site before the change and has yet to count its sample
         * there; later lookups do not find it. A sample's bytes are added when it is counted and
         * freed: equal sums mean every sample taken here was freed (the weights are not 0). */
        gone = __atomic_load_n(&s->pins, __ATOMIC_SEQ_CST) == 0 &&
               __atomic_load_n(&s->alloc_bytes, __ATOMIC_ACQUIRE) ==
                   __atomic_load_n(&s->free_bytes, __ATOMIC_ACQUIRE);
        if (gone) {
            __atomic_store_n(&s->ready, 0, __ATOMIC_RELEASE);
            __atomic_add_fetch(&s->gen, 1, __ATOMIC_RELEASE);
            if (s->kind == RT_SITE_STACK)
                __atomic_sub_fetch(&stacks_taken, 1, __ATOMIC_RELAXED);
            else if (s->kind == RT_SITE_LINE)
                __atomic_sub_fetch(&lines_taken, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_store_n(&s->id, id, __ATOMIC_SEQ_CST);
        }
    }
    claim_lock_drop();
    return gone;
}

uint32_t roundtrim_site_lines_taken(void)
{
    return __atomic_load_n(&lines_taken, __ATOMIC_RELAXED);
}

void roundtrim_site_table_fork_child(void)
{
    claim_lock = 0;
    if (!sites)
        return;
    for (uint32_t i = 0; i < ROUNDTRIM_SITES_MAX; i++)
        sites[i].pins = 0;
}

uint32_t roundtrim_site_stacks_taken(void)
{
    return __atomic_load_n(&stacks_taken, __ATOMIC_RELAXED);
}

int32_t roundtrim_site_start(void)
{
    static int32_t start = -1;
    int32_t i = __atomic_load_n(&start, __ATOMIC_ACQUIRE);
    if (i >= 0 || !sites)
        return i;
    /* No stack hashes to this id with zero frames and this salt; the same entry for every
     * thread (the table's compare-and-swap decides). */
    uint64_t id = as_id(roundtrim_hash_mix(ROUNDTRIM_HASH_START, 0x7374617274u)); /* "start" */
    i = probe(id, 0, ROUNDTRIM_SITES_MAIN, NULL, 0, NULL, 0, RT_SITE_START);
    if (i >= 0) {
        roundtrim_site_unpin(i); /* never given back */
        __atomic_store_n(&start, i, __ATOMIC_RELEASE);
    }
    return i;
}

const struct roundtrim_site *roundtrim_site_at(uint32_t i)
{
    if (!sites || i >= ROUNDTRIM_SITES_MAX || !__atomic_load_n(&sites[i].ready, __ATOMIC_ACQUIRE))
        return NULL;
    return &sites[i];
}

void roundtrim_site_add_alloc(int32_t site, uint64_t weight)
{
    __atomic_add_fetch(&sites[site].alloc_bytes, weight, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sites[site].samples, 1, __ATOMIC_RELAXED);
}

#define INDEX_MASK ((1u << ROUNDTRIM_SITE_INDEX_BITS) - 1)

uint32_t roundtrim_site_ref(int32_t site)
{
    return (uint32_t)site | __atomic_load_n(&sites[site].gen, __ATOMIC_ACQUIRE)
                                << ROUNDTRIM_SITE_INDEX_BITS;
}

int32_t roundtrim_site_of_ref(uint32_t ref)
{
    uint32_t i = ref & INDEX_MASK;
    if (!sites || ((__atomic_load_n(&sites[i].gen, __ATOMIC_ACQUIRE) << ROUNDTRIM_SITE_INDEX_BITS) ^
                   (ref & ~INDEX_MASK)) != 0)
        return -1;
    return (int32_t)i;
}

void roundtrim_site_add_free(uint32_t ref, uint64_t weight)
{
    int32_t i = roundtrim_site_of_ref(ref);
    if (i >= 0)
        __atomic_add_fetch(&sites[i].free_bytes, weight, __ATOMIC_RELAXED);
}

/* One word for the pair: a code object and which of those that held its address it is. */
static uint64_t code_key(const void *code, uint32_t names_key)
{
    uint64_t k =
        roundtrim_hash_mix(roundtrim_hash_mix(ROUNDTRIM_HASH_START, (uintptr_t)code), names_key);
    return k ? k : 1;
}

void roundtrim_code_names_note(const void *code, uint32_t names_key)
{
    if (!code_names || !code)
        return;
    uint64_t key = code_key(code, names_key);
    uint32_t i = roundtrim_hash_slot(key, 12) & (CODE_NAMES_MAX - 1);
    for (uint32_t n = 0; n < 64; n++, i = (i + 1) & (CODE_NAMES_MAX - 1)) {
        struct roundtrim_code_names *c = &code_names[i];
        uint64_t k = __atomic_load_n(&c->key, __ATOMIC_ACQUIRE);
        if (k == key)
            return;
        if (k != 0)
            continue;
        if (!__atomic_compare_exchange_n(&c->key, &k, key, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            if (k == key)
                return;
            continue;
        }
        if (roundtrim_python_code_names(code, c->file, sizeof c->file, c->function,
                                        sizeof c->function))
            __atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
        return;
    }
}

const struct roundtrim_code_names *roundtrim_code_names_find(const void *code, uint32_t names_key)
{
    if (!code_names || !code)
        return NULL;
    uint64_t key = code_key(code, names_key);
    uint32_t i = roundtrim_hash_slot(key, 12) & (CODE_NAMES_MAX - 1);
    for (uint32_t n = 0; n < 64; n++, i = (i + 1) & (CODE_NAMES_MAX - 1)) {
        struct roundtrim_code_names *c = &code_names[i];
        uint64_t k = __atomic_load_n(&c->key, __ATOMIC_ACQUIRE);
        if (k == 0)
            return NULL;
        if (k == key)
            return __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) ? c : NULL;
    }
    return NULL;
}
