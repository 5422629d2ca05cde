#include "runtime/sites/sample_table.h"
#include "runtime/core/hash.h"
#include "runtime/core/pages.h"

/* A slot's key is the block's address, or one of these (addresses are at least 16-aligned, so
 * never below 16). */
#define KEY_EMPTY     0u /* ends a probe */
#define KEY_TOMBSTONE 1u /* a removed sample: probes go on, inserts may reuse it */
#define KEY_BUSY      2u /* an insert is writing the slot */
#define KEY_KEPT      3u /* a freed sample kept until its round's record is written */

/* The round of a block of roundtrim's own (insert_own): no round the program reaches. */
#define ROUND_OWN UINT32_MAX

/* A place where a thread may be interrupted or preempted while another one changes the slot it
 * reads. The unit suite builds it (ROUNDTRIM_SAMPLE_TABLE_TEST) as a call to a function of its
 * own, which frees and samples a block there; elsewhere it is nothing. */
#ifdef ROUNDTRIM_SAMPLE_TABLE_TEST
void roundtrim_sample_table_window(const char *where);
#define WINDOW(where) roundtrim_sample_table_window(where)
#else
#define WINDOW(where) ((void)0)
#endif

/* The stress test builds a smaller table, quicker to scan. */
#ifndef ROUNDTRIM_SAMPLE_TABLE_BITS
#define ROUNDTRIM_SAMPLE_TABLE_BITS 16
#endif
#define TABLE_BITS  ROUNDTRIM_SAMPLE_TABLE_BITS
#define TABLE_SLOTS (1u << TABLE_BITS)
#define PROBE_MAX   64u

/* A slot's fields are written by the thread that holds it (KEY_BUSY, or its key: the block's own
 * free) while the worker's scan may read them: both sides use atomic accesses. `gen` counts the
 * samples the slot has held, so that a scan tells a slot freed and taken again for the same
 * address (a block freed and allocated again while the scan read it) from one that stayed. */
struct slot {
    uintptr_t key;
    uint32_t site, round;
    uint32_t freed_in, gen;
    uint64_t weight;
    uint32_t wrapper; /* the object allocator's wrapper that took it (0: malloc's) */
};

uint8_t *roundtrim_sample_filter;
static struct slot *slots;

bool roundtrim_sample_table_init(void)
{
    size_t filter_bytes = (size_t)1 << ROUNDTRIM_SAMPLE_FILTER_BITS;
    size_t table_bytes = sizeof(struct slot) * TABLE_SLOTS;
    /* Untouched pages cost nothing: only the slots samples land in become resident. */
    void *f = roundtrim_pages_map(filter_bytes);
    if (!f)
        return false;
    void *t = roundtrim_pages_map(table_bytes);
    if (!t) {
        roundtrim_pages_unmap(f, filter_bytes);
        return false;
    }
    slots = t;
    __atomic_store_n(&roundtrim_sample_filter, (uint8_t *)f, __ATOMIC_RELEASE);
    return true;
}

static uint32_t home(const void *p)
{
    return roundtrim_hash_slot((uintptr_t)p >> 4, TABLE_BITS);
}

static uint8_t *filter_byte(const void *p)
{
    return &roundtrim_sample_filter[((uintptr_t)p >> 4) &
                                    ((1u << ROUNDTRIM_SAMPLE_FILTER_BITS) - 1)];
}

static void filter_add(const void *p, int delta)
{
    uint8_t *b = filter_byte(p);
    uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);
    do {
        if (v == 255 || (delta < 0 && v == 0))
            return; /* saturated: stays set for good (a lookup too many, never one too few) */
    } while (!__atomic_compare_exchange_n(b, &v, (uint8_t)(v + delta), true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
}

/* The slot that holds p's sample, or NULL. A slot never becomes empty again, so p is never past
 * an empty one. */
static struct slot *find(const void *p)
{
    uint32_t i = home(p);
    for (uint32_t n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        uintptr_t k = __atomic_load_n(&slots[i].key, __ATOMIC_ACQUIRE);
        if (k == KEY_EMPTY)
            return NULL;
        if (k == (uintptr_t)p)
            return &slots[i];
    }
    return NULL;
}

/* Claims a slot for p: the slot that still holds p (a block freed where no hook saw it), else
 * the first reusable one on p's probe sequence. p's own slot is looked for first: a removed slot
 * before it, reused, would leave the old sample live for good. */
static struct slot *claim(const void *p)
{
    struct slot *s = find(p);
    uintptr_t k = (uintptr_t)p;
    if (s && __atomic_compare_exchange_n(&s->key, &k, KEY_BUSY, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED)) {
        filter_add(p, -1);
        return s;
    }
    uint32_t i = home(p);
    for (uint32_t n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        k = __atomic_load_n(&slots[i].key, __ATOMIC_ACQUIRE);
        if ((k == KEY_EMPTY || k == KEY_TOMBSTONE) &&
            __atomic_compare_exchange_n(&slots[i].key, &k, KEY_BUSY, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return &slots[i];
    }
    return NULL;
}

static bool insert(const void *p, uint32_t site, uint32_t round, uint64_t weight, uint32_t wrapper)
{
    if (!slots)
        return false;
    struct slot *s = claim(p);
    if (!s)
        return false;
    /* A new sample: a scan that read the slot before sees the count move (release: a scan that
     * sees it also sees the slot busy). */
    __atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->site, site, __ATOMIC_RELEASE);
    __atomic_store_n(&s->round, round, __ATOMIC_RELEASE);
    __atomic_store_n(&s->freed_in, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->weight, weight, __ATOMIC_RELEASE);
    __atomic_store_n(&s->wrapper, wrapper, __ATOMIC_RELEASE);
    filter_add(p, +1);
    __atomic_store_n(&s->key, (uintptr_t)p, __ATOMIC_RELEASE);
    return true;
}

bool roundtrim_sample_table_insert(const void *p, uint32_t site, uint32_t round, uint64_t weight,
                                   uint32_t wrapper)
{
    return insert(p, site, round, weight, wrapper);
}

bool roundtrim_sample_table_insert_own(const void *p, uint64_t bytes)
{
    return insert(p, 0, ROUND_OWN, bytes, 0);
}

enum roundtrim_sample_found roundtrim_sample_table_remove(const void *p, uint32_t round,
                                                          uint32_t reported, uint32_t *site,
                                                          uint64_t *weight)
{
    struct slot *s = find(p);
    if (!s)
        return ROUNDTRIM_SAMPLE_NOT_FOUND;
    *site = s->site;
    *weight = s->weight;
    bool own = s->round == ROUND_OWN;
    /* Only this block's own free can remove its key, and the block is being freed once.
     * A block from before the round in progress was live at the end of the previous round;
     * while that round's record is not written, the sample is kept for it. */
    if (!own && s->round < round && round - 1 > reported) {
        __atomic_store_n(&s->freed_in, round, __ATOMIC_RELAXED);
        __atomic_store_n(&s->key, KEY_KEPT, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&s->key, KEY_TOMBSTONE, __ATOMIC_RELEASE);
    }
    filter_add(p, -1);
    return own ? ROUNDTRIM_SAMPLE_OWN : ROUNDTRIM_SAMPLE_PROGRAM;
}

uint64_t roundtrim_sample_table_scan(void (*fn)(const struct roundtrim_sample_view *, void *),
                                     void *arg, uint32_t done)
{
    uint64_t live = 0;
    if (!slots)
        return 0;
    for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
        struct slot *s = &slots[i];
        uint32_t gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
        uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (k == KEY_EMPTY || k == KEY_TOMBSTONE || k == KEY_BUSY)
            continue;
        struct roundtrim_sample_view v;
        v.site = __atomic_load_n(&s->site, __ATOMIC_ACQUIRE);
        v.round = __atomic_load_n(&s->round, __ATOMIC_ACQUIRE);
        WINDOW("reading"); /* the block may be freed, and sampled again, meanwhile */
        v.freed_in = __atomic_load_n(&s->freed_in, __ATOMIC_ACQUIRE);
        v.weight = __atomic_load_n(&s->weight, __ATOMIC_ACQUIRE);
        v.wrapper = __atomic_load_n(&s->wrapper, __ATOMIC_ACQUIRE);
        /* A slot that changed while read (freed, or freed and taken again, even by the same
         * address) is left for the next scan. */
        if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) != k ||
            __atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen || v.round == ROUND_OWN)
            continue;
        if (k == KEY_KEPT) {
            fn(&v, arg);
            if (v.freed_in <= done + 1)
                __atomic_compare_exchange_n(&s->key, &k, KEY_TOMBSTONE, false, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED);
        } else {
            v.freed_in = 0;
            fn(&v, arg);
            live++;
        }
    }
    return live;
}

void roundtrim_sample_table_fork_child(void)
{
    if (!slots)
        return;
    for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
        uintptr_t k = slots[i].key;
        if (k == KEY_KEPT || k == KEY_BUSY) /* BUSY: an insert of a thread the child lacks */
            slots[i].key = KEY_TOMBSTONE;
        else if (k > KEY_KEPT && slots[i].round != ROUND_OWN)
            slots[i].round = 0;
    }
}
