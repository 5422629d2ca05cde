/* Calibration interposer: the thinnest LD_PRELOAD library that counts what roundtrim counts
 * (calls and exact usable bytes of every allocation and free, per thread) and forwards straight
 * to glibc's __libc_* entry points. make bench measures its instructions per malloc/free pair
 * beside roundtrim's: the difference is what roundtrim adds above the floor of any counting
 * interposer. Nothing reads the counters; they only have to be kept, as roundtrim keeps them.
 *
 * glibc only: the usable size is read from the chunk header as glibc's malloc_usable_size
 * computes it, which holds only for blocks glibc allocated. */
#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

#define EXPORT __attribute__((visibility("default")))

struct floor_counters {
    unsigned long malloc_calls, malloc_bytes, free_calls, free_bytes;
};

/* initial-exec: one load from the thread pointer, as roundtrim's counters. */
static __thread struct floor_counters counters __attribute__((tls_model("initial-exec")));

static inline size_t usable(const void *p)
{
    size_t header = ((const size_t *)p)[-1];
    /* mmapped chunks (bit 1) carry a whole header; others use the next chunk's first word. */
    return (header & ~(size_t)7) - sizeof(size_t) - (header & 2) * (sizeof(size_t) / 2);
}

static inline void *counted(void *p)
{
    if (__builtin_expect(p != NULL, 1)) {
        counters.malloc_calls++;
        counters.malloc_bytes += usable(p);
    }
    return p;
}

static inline void uncount(void *p)
{
    counters.free_calls++;
    counters.free_bytes += usable(p);
}

EXPORT void *malloc(size_t n)
{
    return counted(__libc_malloc(n));
}

EXPORT void free(void *p)
{
    if (__builtin_expect(p != NULL, 1)) {
        uncount(p);
        __libc_free(p);
    }
}

EXPORT void *calloc(size_t n, size_t size)
{
    return counted(__libc_calloc(n, size));
}

EXPORT void *realloc(void *p, size_t n)
{
    if (p != NULL)
        uncount(p);
    void *q = __libc_realloc(p, n);
    if (q == NULL && p != NULL && n != 0) {
        counters.free_calls--; /* the old block stays */
        counters.free_bytes -= usable(p);
        return NULL;
    }
    return counted(q);
}

EXPORT void *memalign(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return 22; /* EINVAL */
    void *p = __libc_memalign(align, n);
    if (p == NULL)
        return 12; /* ENOMEM */
    *out = counted(p);
    return 0;
}
