#include "runtime/alloc/next_alloc.h"

#include <dlfcn.h>
#include <sched.h>
#include <string.h>

#include "runtime/alloc/thread_counters.h"
#include "runtime/core/loaded_object.h"
#include "runtime/core/real_dlsym.h"

static void *boot_malloc(size_t n);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t size);
static void *boot_realloc(void *p, size_t n);
static int boot_posix_memalign(void **out, size_t align, size_t n);
static void *boot_aligned_alloc(size_t align, size_t n);
static void *boot_memalign(size_t align, size_t n);
static size_t boot_usable_size(void *p);

struct roundtrim_next_alloc roundtrim_next = {
    boot_malloc,         boot_free,          boot_calloc,   boot_realloc,
    boot_posix_memalign, boot_aligned_alloc, boot_memalign, boot_usable_size,
};

/* The fast paths' entries while off: the thread goes to the slow path. free's is replaced by the
 * hooks' (roundtrim_alloc_hooks_install), which also does what the slow path does besides
 * counting; this one is enough before the library's start, with sampling off. */
static void *fast_off_malloc(size_t n)
{
    void *p = roundtrim_next.malloc(n);
    roundtrim_tls_fast = NULL;
    return p;
}

static void fast_off_free(void *p)
{
    roundtrim_tls_fast = NULL;
    roundtrim_next.free(p);
}

struct roundtrim_fast_calls roundtrim_fast_next = {boot_malloc, boot_free};
struct roundtrim_fast_calls roundtrim_fast_modes[3] = {
    [ROUNDTRIM_FAST_OFF] = {fast_off_malloc, fast_off_free},
    [ROUNDTRIM_FAST_PLAIN] = {boot_malloc, boot_free},
    [ROUNDTRIM_FAST_SAMPLING] = {fast_off_malloc, fast_off_free},
};

bool roundtrim_glibc_sizes;
__thread bool roundtrim_in_next_alloc __attribute__((tls_model("initial-exec")));
uint8_t roundtrim_fast_glibc;
uint8_t roundtrim_fast_other;
bool roundtrim_sampling_on;

char roundtrim_bootstrap_pool[ROUNDTRIM_BOOTSTRAP_POOL_BYTES] __attribute__((aligned(64)));
static size_t pool_used; /* bump pointer, advanced atomically */
bool roundtrim_bootstrap_used;

enum { UNRESOLVED, RESOLVING, RESOLVED };
static int resolve_state = UNRESOLVED;
/* Set on the thread doing the lookup: dlsym's own allocations come back to us meanwhile. */
static __thread bool resolving_here;

/* Each pool block starts with a 16-byte header holding its size. */
#define POOL_HEADER 16

static void *pool_alloc(size_t n, size_t align)
{
    if (align < POOL_HEADER)
        align = POOL_HEADER;
    size_t used = __atomic_load_n(&pool_used, __ATOMIC_RELAXED);
    for (;;) {
        size_t start = (used + POOL_HEADER + align - 1) & ~(align - 1);
        size_t end = start + n;
        if (n > ROUNDTRIM_BOOTSTRAP_POOL_BYTES || end > ROUNDTRIM_BOOTSTRAP_POOL_BYTES)
            return NULL;
        if (__atomic_compare_exchange_n(&pool_used, &used, end, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            *(size_t *)(roundtrim_bootstrap_pool + start - POOL_HEADER) = n;
            __atomic_store_n(&roundtrim_bootstrap_used, true, __ATOMIC_RELEASE);
            roundtrim_fast_path_suspend();
            return roundtrim_bootstrap_pool + start; /* static storage: already zeroed */
        }
    }
}

size_t roundtrim_bootstrap_usable_size(const void *p)
{
    return *(const size_t *)((const char *)p - POOL_HEADER);
}

static void *lookup(const char *name)
{
    return roundtrim_next_symbol(name);
}

/* glibc's header layout is used only when it gives exactly what glibc itself reports. */
static bool glibc_header_layout_holds(const struct roundtrim_next_alloc *n)
{
    struct roundtrim_loaded_object owner;
    if (!roundtrim_loaded_object_of((void *)n->malloc, &owner) ||
        !roundtrim_loaded_object_is_libc(&owner))
        return false;
    /* Look before reading any header: glibc's smallest chunk holds 24 usable bytes on 64-bit
     * (12 on 32-bit). A malloc that only borrows glibc's name (valgrind's, say) reports the
     * requested size, and its blocks have no header to read. */
    void *probe = n->malloc(1);
    if (!probe)
        return false;
    bool glibc_sized = n->malloc_usable_size(probe) == 3 * sizeof(size_t);
    n->free(probe);
    if (!glibc_sized)
        return false;
    /* One block of each kind of chunk (the probe above was a small one): one from the heap, one
     * mapped on its own; the aligned one below has a header of its own again. The mapped one is
     * larger than glibc's largest dynamic mmap threshold (4 MiB times sizeof(long)): freeing a
     * smaller mapped block would raise the program's threshold, and its blocks of 128 KiB up to
     * that size would then come from the heap instead of being mapped as they are without
     * roundtrim. */
    static const size_t sizes[] = {1000, ((size_t)4 << 20) * sizeof(long) + ((size_t)1 << 20)};
    bool same = true;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && same; i++) {
        void *p = n->malloc(sizes[i]);
        if (!p)
            return false;
        same = roundtrim_glibc_header_usable_size(p) == n->malloc_usable_size(p);
        n->free(p);
    }
    void *q = NULL;
    if (n->posix_memalign(&q, 4096, 10000) == 0 && q) {
        same = same && roundtrim_glibc_header_usable_size(q) == n->malloc_usable_size(q);
        n->free(q);
    }
    return same;
}

void roundtrim_next_alloc_resolve(void)
{
    if (__atomic_load_n(&resolve_state, __ATOMIC_ACQUIRE) == RESOLVED || resolving_here)
        return;
    int expected = UNRESOLVED;
    if (!__atomic_compare_exchange_n(&resolve_state, &expected, RESOLVING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&resolve_state, __ATOMIC_ACQUIRE) != RESOLVED)
            sched_yield();
        return;
    }
    resolving_here = true;
    struct roundtrim_next_alloc n;
    n.malloc = (void *(*)(size_t))lookup("malloc");
    n.free = (void (*)(void *))lookup("free");
    n.calloc = (void *(*)(size_t, size_t))lookup("calloc");
    n.realloc = (void *(*)(void *, size_t))lookup("realloc");
    n.posix_memalign = (int (*)(void **, size_t, size_t))lookup("posix_memalign");
    n.aligned_alloc = (void *(*)(size_t, size_t))lookup("aligned_alloc");
    n.memalign = (void *(*)(size_t, size_t))lookup("memalign");
    n.malloc_usable_size = (size_t(*)(void *))lookup("malloc_usable_size");
    /* Allocators without memalign/aligned_alloc still have posix_memalign; the hooks fall back
     * to it. Without malloc/free at all there is nothing to forward to: keep the pool. */
    if (n.malloc && n.free && n.calloc && n.realloc && n.posix_memalign && n.malloc_usable_size) {
        __atomic_store_n(&roundtrim_next.malloc_usable_size, n.malloc_usable_size,
                         __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.posix_memalign, n.posix_memalign, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.aligned_alloc, n.aligned_alloc, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.memalign, n.memalign, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.free, n.free, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.realloc, n.realloc, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.calloc, n.calloc, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_next.malloc, n.malloc, __ATOMIC_RELEASE);
        __atomic_store_n(&roundtrim_fast_modes[ROUNDTRIM_FAST_PLAIN].malloc, n.malloc,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&roundtrim_fast_modes[ROUNDTRIM_FAST_PLAIN].free, n.free,
                         __ATOMIC_RELAXED);
        roundtrim_glibc_sizes = glibc_header_layout_holds(&n);
        roundtrim_fast_path_resume();
    }
    resolving_here = false;
    __atomic_store_n(&resolve_state, RESOLVED, __ATOMIC_RELEASE);
}

/* The boot functions run only until the lookup is done: they trigger it, then forward, or serve
 * from the pool when called by dlsym during the lookup itself. */
static bool resolved(void)
{
    roundtrim_next_alloc_resolve();
    return __atomic_load_n(&resolve_state, __ATOMIC_ACQUIRE) == RESOLVED &&
           roundtrim_next.malloc != boot_malloc;
}

static void *boot_malloc(size_t n)
{
    return resolved() ? roundtrim_next.malloc(n) : pool_alloc(n, POOL_HEADER);
}

static void boot_free(void *p)
{
    if (p && !roundtrim_bootstrap_owns(p) && resolved())
        roundtrim_next.free(p);
}

static void *boot_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    return resolved() ? roundtrim_next.calloc(n, size) : pool_alloc(total, POOL_HEADER);
}

static void *boot_realloc(void *p, size_t n)
{
    if (resolved())
        return roundtrim_next.realloc(p, n);
    void *q = pool_alloc(n, POOL_HEADER);
    if (q && p)
        memcpy(q, p,
               roundtrim_bootstrap_usable_size(p) < n ? roundtrim_bootstrap_usable_size(p) : n);
    return q;
}

static int boot_posix_memalign(void **out, size_t align, size_t n)
{
    if (resolved())
        return roundtrim_next.posix_memalign(out, align, n);
    void *p = pool_alloc(n, align);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

static void *boot_aligned_alloc(size_t align, size_t n)
{
    void *p = NULL;
    return boot_posix_memalign(&p, align, n) == 0 ? p : NULL;
}

static void *boot_memalign(size_t align, size_t n)
{
    return boot_aligned_alloc(align, n);
}

static size_t boot_usable_size(void *p)
{
    if (!p)
        return 0;
    if (roundtrim_bootstrap_owns(p))
        return roundtrim_bootstrap_usable_size(p);
    return resolved() ? roundtrim_next.malloc_usable_size(p) : 0;
}
