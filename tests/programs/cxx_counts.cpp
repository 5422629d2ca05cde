// C++ allocations through operator new/delete, counted once whatever allocator serves them.
// Prints, for round 2, what it allocated and freed as the allocator reports it.
// --no-bad-alloc leaves out the failing new (Debian's mimalloc aborts there instead of throwing).
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include <new>

#include "round_sync.h"

struct alignas(64) Line {
    char bytes[64];
};

struct Tally {
    unsigned long mallocs = 0, frees = 0, malloc_bytes = 0, free_bytes = 0;
    void on_new(void *p)
    {
        mallocs++;
        malloc_bytes += malloc_usable_size(p);
    }
    void on_delete(void *p)
    {
        frees++;
        free_bytes += malloc_usable_size(p);
    }
};

int main(int argc, char **argv)
{
    bool try_huge = !(argc > 1 && strcmp(argv[1], "--no-bad-alloc") == 0);
    if (end_round_and_wait(0) != 0)
        return 3;
    Tally t;
    char *arrays[10];
    for (int i = 0; i < 10; i++) {
        arrays[i] = new char[1000 + 100 * i];
        t.on_new(arrays[i]);
    }
    for (int i = 0; i < 10; i += 2) {
        t.on_delete(arrays[i]);
        delete[] arrays[i];
    }
    for (int i = 0; i < 3; i++) {
        Line *l = new Line;
        t.on_new(l);
        t.on_delete(l);
        delete l;
    }
    int *n = new (std::nothrow) int(7);
    t.on_new(n);
    t.on_delete(n);
    delete n;
    bool caught = false;
    try {
        if (!try_huge)
            throw std::bad_alloc();
        char *huge = new char[(size_t)1 << 62];
        huge[0] = 1;
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    if (end_round_and_wait(1) != 0)
        return 3;
    printf("{\"round\":2,\"malloc_calls\":%lu,\"free_calls\":%lu,\"malloc_bytes\":%lu,"
           "\"free_bytes\":%lu,\"bad_alloc_caught\":%s}\n",
           t.mallocs, t.frees, t.malloc_bytes, t.free_bytes, caught && try_huge ? "true" : "false");
    for (int i = 1; i < 10; i += 2)
        delete[] arrays[i];
    return 0;
}
