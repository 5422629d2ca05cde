#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime/cuda/block_map.h"

#include "runtime/core/pages.h"

void roundtrim_cuda_map_place(struct roundtrim_cuda_map_entry *slots, size_t cap,
                              const struct roundtrim_cuda_map_entry *e)
{
    size_t i = roundtrim_cuda_map_home(e->key, e->flags, cap);
    while (slots[i].used)
        i = (i + 1) & (cap - 1);
    slots[i] = *e;
    slots[i].used = 1;
}

bool roundtrim_cuda_map_grow(struct roundtrim_cuda_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : ROUNDTRIM_CUDA_MAP_MIN_SLOTS;
    struct roundtrim_cuda_map_entry *ns = roundtrim_pages_map(ncap * sizeof *ns);
    if (!ns)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].used)
            roundtrim_cuda_map_place(ns, ncap, &m->slots[i]);
    roundtrim_pages_unmap(m->slots, m->cap * sizeof *m->slots);
    m->slots = ns;
    m->cap = ncap;
    return true;
}

struct roundtrim_cuda_map_entry *roundtrim_cuda_map_find(const struct roundtrim_cuda_map *m,
                                                         uint64_t key, unsigned flags)
{
    if (!m->cap)
        return NULL;
    for (size_t i = roundtrim_cuda_map_home(key, flags, m->cap);; i = (i + 1) & (m->cap - 1)) {
        const struct roundtrim_cuda_map_entry *s = &m->slots[i];
        if (!s->used)
            return NULL;
        if (s->key == key && ((s->flags ^ flags) & ROUNDTRIM_CUDA_MAP_KEY_SPACE) == 0)
            return &m->slots[i];
    }
}

void roundtrim_cuda_map_reset(struct roundtrim_cuda_map *m)
{
    roundtrim_pages_unmap(m->slots, m->cap * sizeof *m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}
