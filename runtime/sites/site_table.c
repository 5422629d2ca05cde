#include "runtime/sites/site_table.h"

#include <string.h>

#include "runtime/python/frames.h"
#include "runtime/core/hash.h"
#include "runtime/core/pages.h"

#define CODE_NAMES_MAX 4096u

static struct roundtrim_site *sites;
static uint32_t stacks_taken;
static struct roundtrim_code_names *code_names;

bool roundtrim_site_table_init(void)
{
    sites = roundtrim_pages_map(sizeof *sites * ROUNDTRIM_SITES_MAX);
    code_names = roundtrim_pages_map(sizeof *code_names * CODE_NAMES_MAX);
    return sites && code_names;
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
    return h ? h : 1;
}

/* The site of id in entries [base, base + size), created if new with these frames; -1 when
 * they are all taken by others. */
static int32_t probe(uint64_t id, uint32_t base, uint32_t size, const uintptr_t *frames, int depth,
                     const struct roundtrim_site_py *py, int py_depth,
                     enum roundtrim_site_kind kind)
{
    uint32_t i = (uint32_t)(id % size);
    for (uint32_t n = 0; n < size; n++, i = i + 1 == size ? 0 : i + 1) {
        struct roundtrim_site *s = &sites[base + i];
        uint64_t k = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
        if (k == id)
            return (int32_t)(base + i);
        if (k != 0)
            continue;
        if (!__atomic_compare_exchange_n(&s->id, &k, id, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            if (k == id)
                return (int32_t)(base + i);
            continue;
        }
        s->kind = (uint8_t)kind;
        if (kind == RT_SITE_STACK)
            __atomic_add_fetch(&stacks_taken, 1, __ATOMIC_RELAXED);
        s->depth = (uint8_t)depth;
        s->py_depth = (uint8_t)py_depth;
        if (depth > 0)
            memcpy(s->frames, frames, sizeof *frames * (size_t)depth);
        if (py_depth > 0)
            memcpy(s->py, py, sizeof *py * (size_t)py_depth);
        __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
        return (int32_t)(base + i);
    }
    return -1;
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
    return h ? h : 1;
}

int32_t roundtrim_site_intern(const uintptr_t *frames, int depth,
                              const struct roundtrim_site_py *py, int py_depth)
{
    if (!sites)
        return -1;
    int32_t i = probe(frames_id(frames, depth, py, py_depth), 0, ROUNDTRIM_SITES_MAIN, frames,
                      depth, py, py_depth, RT_SITE_STACK);
    if (i >= 0)
        return i;
    return probe(line_id(frames, depth, py, py_depth), ROUNDTRIM_SITES_MAIN, ROUNDTRIM_SITES_LINE,
                 frames, depth, py, py_depth, RT_SITE_LINE);
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
    uint64_t id = roundtrim_hash_mix(ROUNDTRIM_HASH_START, 0x7374617274u); /* "start" */
    i = probe(id ? id : 1, 0, ROUNDTRIM_SITES_MAIN, NULL, 0, NULL, 0, RT_SITE_START);
    if (i >= 0)
        __atomic_store_n(&start, i, __ATOMIC_RELEASE);
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

void roundtrim_site_add_free(uint32_t site, uint64_t weight)
{
    if (site < ROUNDTRIM_SITES_MAX)
        __atomic_add_fetch(&sites[site].free_bytes, weight, __ATOMIC_RELAXED);
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
