/* A C program with its own malloc family built into the executable (as programs that link an
 * allocator statically do): no call of the program reaches roundtrim's malloc. It ends one round
 * and waits for its record. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "round_sync.h"

static void *pages(size_t n)
{
    /* a size word in front of each block, for realloc */
    size_t *p = mmap(NULL, n + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    p[0] = n;
    return (char *)p + 16;
}

void *malloc(size_t n)
{
    return pages(n ? n : 1);
}

void free(void *p)
{
    if (p)
        munmap((char *)p - 16, *(size_t *)((char *)p - 16) + 16);
}

void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n))
        return NULL;
    return malloc(n); /* fresh pages are zero */
}

void *realloc(void *p, size_t n)
{
    void *q = malloc(n);
    if (p && q) {
        size_t old = *(size_t *)((char *)p - 16);
        memcpy(q, p, old < n ? old : n);
        free(p);
    }
    return q;
}

int posix_memalign(void **out, size_t align, size_t n)
{
    (void)align; /* page-aligned plus 16: enough for the alignments asked here */
    *out = malloc(n);
    return *out ? 0 : ENOMEM;
}

int main(void)
{
    char *s = malloc(100);
    strcpy(s, "ok");
    free(s);
    return end_round_and_wait(0) == 0 ? 0 : 3;
}
