#include "runtime/rounds/memory_parts.h"

#include <string.h>

#include "runtime/alloc/heap_parts.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/core/pages_resident.h"
#include "runtime/core/proc_mem.h"
#include "runtime/cuda/track.h"
#include "runtime/python/arenas.h"
#include "runtime/python/bridge.h"
#include "runtime/python/cupy_pools.h"

static void skip(struct roundtrim_memory_parts *m, enum roundtrim_mem_part p,
                 enum roundtrim_skip why)
{
    m->value[p] = 0;
    m->part_skipped[p] = why;
}

/* Device memory: what the program's tensors and buffers use, and what caches keep beside it.
 * PyTorch's and CuPy's cached blocks were allocated from the driver and look live to the hooks. */
static void read_device(struct roundtrim_memory_parts *m, const struct roundtrim_cuda_round *cuda)
{
    if (!cuda->present) {
        skip(m, RT_PART_DEVICE_LIVE, RT_SKIP_no_cuda);
        skip(m, RT_PART_DEVICE_CACHED, RT_SKIP_no_cuda);
        return;
    }
    uint64_t pool_cached = 0, allocated = 0, reserved = 0, torch_cached = 0;
    enum roundtrim_skip pools = roundtrim_cuda_pool_cached(&pool_cached);
    enum roundtrim_skip torch = roundtrim_python_torch_memory(&allocated, &reserved);
    if (!torch && reserved > allocated)
        torch_cached = reserved - allocated;
    /* PyTorch's cache unread where the program uses it (the GIL held too long): the split of
     * device memory between live and cached is unknown, never silently all live. */
    enum roundtrim_skip torch_news = roundtrim_python_torch_news(torch);
    uint64_t cupy_cached = 0;
    enum roundtrim_skip cupy_news =
        roundtrim_python_cupy_news(roundtrim_python_cupy_cached(&cupy_cached));
    enum roundtrim_skip unread = torch_news ? torch_news : cupy_news;
    if (unread) {
        skip(m, RT_PART_DEVICE_LIVE, unread);
        skip(m, RT_PART_DEVICE_CACHED, unread);
        return;
    }
    uint64_t live = cuda->live_bytes, caches = torch_cached + cupy_cached;
    m->value[RT_PART_DEVICE_LIVE] = live > caches ? live - caches : 0;
    if (pools)
        skip(m, RT_PART_DEVICE_CACHED, pools);
    else
        m->value[RT_PART_DEVICE_CACHED] = pool_cached + caches;
}

void roundtrim_memory_parts_read(struct roundtrim_memory_parts *m,
                                 const struct roundtrim_traffic *total,
                                 const struct roundtrim_cuda_round *cuda)
{
    struct roundtrim_status_mem st;
    bool have_status = roundtrim_status_mem_read(&st);
    m->rss = st.rss;
    struct roundtrim_heap_parts heap;
    roundtrim_heap_parts_read(total, &heap);
    if (heap.live_known) {
        m->value[RT_PART_HEAP_LIVE] = heap.live + heap.uncounted;
        m->heap_uncounted = heap.uncounted;
    } else
        skip(m, RT_PART_HEAP_LIVE, heap.live_skipped);
    m->largest_arena_permille = heap.largest_arena_permille;
    if (heap.free_known)
        m->value[RT_PART_HEAP_FREE] = heap.free_resident;
    else
        skip(m, RT_PART_HEAP_FREE, heap.free_skipped);
    uint64_t py = 0;
    enum roundtrim_skip py_why = roundtrim_python_arena_bytes(&py);
    if (py_why)
        skip(m, RT_PART_PYTHON, py_why);
    else
        m->value[RT_PART_PYTHON] = py;
    if (!have_status || !st.have_parts) {
        enum roundtrim_skip why =
            have_status ? RT_SKIP_kernel_without_rss_parts : RT_SKIP_status_unreadable;
        skip(m, RT_PART_OTHER_ANON, why);
        skip(m, RT_PART_FILE, why);
        skip(m, RT_PART_SHMEM, why);
        skip(m, RT_PART_ROUNDTRIM, why);
    } else {
        m->value[RT_PART_FILE] = st.file;
        m->value[RT_PART_SHMEM] = st.shmem;
        /* roundtrim's own pages are anonymous too: the sampler's tables grow as sites are found,
         * which is no growth of the program's. */
        uint64_t own = 0;
        if (roundtrim_pages_resident(&own)) {
            own = own < st.anon ? own : st.anon;
            m->value[RT_PART_ROUNDTRIM] = own;
        } else {
            own = 0; /* left in other_anon, as a program's mmap would be */
            skip(m, RT_PART_ROUNDTRIM, RT_SKIP_pagemap_unreadable);
        }
        /* The rest of the anonymous memory; the parts it is taken from must all be known. A
         * process without Python has no arenas: 0 is then exact. */
        enum roundtrim_skip why = m->part_skipped[RT_PART_HEAP_LIVE]   ? RT_SKIP_heap_live_unknown
                                  : m->part_skipped[RT_PART_HEAP_FREE] ? RT_SKIP_heap_free_unknown
                                  : py_why && py_why != RT_SKIP_no_python ? RT_SKIP_python_unknown
                                                                          : RT_SKIP_NONE;
        uint64_t known = m->value[RT_PART_HEAP_LIVE] + m->value[RT_PART_HEAP_FREE] + py + own;
        if (why)
            skip(m, RT_PART_OTHER_ANON, why);
        else
            m->value[RT_PART_OTHER_ANON] = st.anon > known ? st.anon - known : 0;
        uint64_t sum = known + m->value[RT_PART_OTHER_ANON] + st.file + st.shmem;
        m->over_rss = sum > st.rss ? sum - st.rss : 0;
    }
    read_device(m, cuda);
}

uint64_t roundtrim_memory_live_now(void)
{
    struct roundtrim_traffic t;
    roundtrim_counters_total(&t);
    uint64_t py = 0;
    roundtrim_python_arena_bytes(&py);
    return roundtrim_counters_live(&t) + py;
}

uint64_t roundtrim_memory_device_now(void)
{
    return roundtrim_cuda_device_held();
}
