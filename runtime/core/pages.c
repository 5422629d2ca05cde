#include "runtime/core/pages.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

/* The mappings handed out, so that the memory parts can tell roundtrim's resident pages from the
 * program's. A slot's start is 0 when free, CLAIMED while its size is being written. A mapping
 * made while every slot is taken is counted in untracked, whole (its residence is not read). */
#define MAPS_MAX ROUNDTRIM_PAGES_MAPS_MAX
#define CLAIMED  ((uintptr_t)1)

static struct {
    uintptr_t start;
    size_t bytes;
} maps[MAPS_MAX];
static uint64_t untracked;

static void note(void *p, size_t bytes)
{
    for (int i = 0; i < MAPS_MAX; i++) {
        uintptr_t free_slot = 0;
        if (__atomic_compare_exchange_n(&maps[i].start, &free_slot, CLAIMED, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&maps[i].bytes, bytes, __ATOMIC_RELAXED);
            __atomic_store_n(&maps[i].start, (uintptr_t)p, __ATOMIC_RELEASE);
            return;
        }
    }
    __atomic_add_fetch(&untracked, bytes, __ATOMIC_RELAXED);
}

static void forget(void *p, size_t bytes)
{
    for (int i = 0; i < MAPS_MAX; i++) {
        uintptr_t mine = (uintptr_t)p;
        if (__atomic_compare_exchange_n(&maps[i].start, &mine, 0, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return;
    }
    __atomic_sub_fetch(&untracked, bytes, __ATOMIC_RELAXED);
}

void *roundtrim_pages_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    note(p, bytes);
    return p;
}

void roundtrim_pages_unmap(void *p, size_t bytes)
{
    if (!p)
        return;
    forget(p, bytes);
    munmap(p, bytes);
}

bool roundtrim_pages_mapping(int i, uintptr_t *start, size_t *bytes)
{
    uintptr_t s = i >= 0 && i < MAPS_MAX ? __atomic_load_n(&maps[i].start, __ATOMIC_ACQUIRE) : 0;
    if (s <= CLAIMED)
        return false;
    *start = s;
    *bytes = __atomic_load_n(&maps[i].bytes, __ATOMIC_RELAXED);
    return true;
}

uint64_t roundtrim_pages_untracked(void)
{
    return __atomic_load_n(&untracked, __ATOMIC_RELAXED);
}
