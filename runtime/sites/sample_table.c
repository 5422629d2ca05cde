#include "runtime/sites/sample_table.h"
#include "runtime/core/hash.h"
#include "runtime/core/pages.h"

/* A slot's key is the block's address, or one of these (addresses are at least 16-aligned, so
 * never below 16). */
#define KEY_EMPTY     0u /* ends a probe */
#define KEY_TOMBSTONE 1u /* a removed sample: probes go on, inserts may reuse it */
#define KEY_BUSY      2u /* an insert is writing the slot */
#define KEY_KEPT      3u /* a freed sample kept until its round's record is written */

#define TABLE_BITS  16
#define TABLE_SLOTS (1u << TABLE_BITS)
#define PROBE_MAX   64u

struct slot {
    uintptr_t key;
    uint32_t site, round;
    uint32_t freed_in, pad;
    uint64_t weight;
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

/* Claims a slot for p: the slot that still holds p (a block freed where no hook saw it), else
 * the first reusable one on p's probe sequence. */
static struct slot *claim(const void *p)
{
    uint32_t i = home(p);
    for (uint32_t n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        uintptr_t k = __atomic_load_n(&slots[i].key, __ATOMIC_ACQUIRE);
        if (k == (uintptr_t)p || k == KEY_EMPTY || k == KEY_TOMBSTONE) {
            if (__atomic_compare_exchange_n(&slots[i].key, &k, KEY_BUSY, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                if (k == (uintptr_t)p)
                    filter_add(p, -1);
                return &slots[i];
            }
        }
    }
    return NULL;
}

bool roundtrim_sample_table_insert(const void *p, uint32_t site, uint32_t round, uint64_t weight)
{
    if (!slots)
        return false;
    struct slot *s = claim(p);
    if (!s)
        return false;
    s->site = site;
    s->round = round;
    s->freed_in = 0;
    s->weight = weight;
    filter_add(p, +1);
    __atomic_store_n(&s->key, (uintptr_t)p, __ATOMIC_RELEASE);
    return true;
}

bool roundtrim_sample_table_remove(const void *p, uint32_t round, uint32_t reported, uint32_t *site,
                                   uint64_t *weight)
{
    uint32_t i = home(p);
    for (uint32_t n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        uintptr_t k = __atomic_load_n(&slots[i].key, __ATOMIC_ACQUIRE);
        if (k == KEY_EMPTY)
            return false;
        if (k != (uintptr_t)p)
            continue;
        struct slot *s = &slots[i];
        *site = s->site;
        *weight = s->weight;
        /* Only this block's own free can remove its key, and the block is being freed once.
         * A block from before the round in progress was live at the end of the previous round;
         * while that round's record is not written, the sample is kept for it. */
        if (s->round < round && round - 1 > reported) {
            s->freed_in = round;
            __atomic_store_n(&s->key, KEY_KEPT, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&s->key, KEY_TOMBSTONE, __ATOMIC_RELEASE);
        }
        filter_add(p, -1);
        return true;
    }
    return false;
}

uint64_t roundtrim_sample_table_scan(void (*fn)(const struct roundtrim_sample_view *, void *),
                                     void *arg, uint32_t done)
{
    uint64_t live = 0;
    if (!slots)
        return 0;
    for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
        struct slot *s = &slots[i];
        uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (k == KEY_EMPTY || k == KEY_TOMBSTONE || k == KEY_BUSY)
            continue;
        struct roundtrim_sample_view v = {
            .site = s->site, .round = s->round, .freed_in = s->freed_in, .weight = s->weight};
        /* A slot that changed while read (freed and reused) is left for the next scan. */
        if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) != k)
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
        else if (k > KEY_KEPT)
            slots[i].round = 0;
    }
}
