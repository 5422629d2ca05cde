// A C++ program that brings its own malloc family in the executable (as programs that link an
// allocator statically do): roundtrim's malloc is never reached, its operator new is. Blocks from
// such an allocator have no glibc header, and roundtrim must never try to size them.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

extern "C" {
static void *pages(size_t n)
{
    void *p = mmap(nullptr, (n + 4095) & ~(size_t)4095, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}
void *malloc(size_t n) { return pages(n ? n : 1); }
void free(void *) {}
void *calloc(size_t a, size_t b) { return pages(a * b + 1); }
void *realloc(void *p, size_t n)
{
    void *q = pages(n ? n : 1);
    if (p && q)
        memcpy(q, p, n < 4096 ? n : 4096);
    return q;
}
int posix_memalign(void **out, size_t, size_t n)
{
    *out = pages(n);
    return *out ? 0 : ENOMEM;
}
void *aligned_alloc(size_t, size_t n) { return pages(n); }
void *memalign(size_t, size_t n) { return pages(n); }
size_t malloc_usable_size(void *) { return 0; }
}

int main()
{
    for (int i = 0; i < 100; i++) {
        char *p = new char[1 << 20];
        p[0] = 1;
        delete[] p;
    }
    puts("ok");
    return 0;
}
