// What the C++ standard asks of every operator new and delete form, checked from inside a C++
// library. The driver (cxx_semantics.c) opens it with dlopen, so that libstdc++ arrives long
// after the process started and outside the global scope, or is linked with it.
// Prints one JSON line: how many of each check held, and, between two round ends, the blocks it
// allocated and freed as the allocator reports them (for the round record to match).
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>

#include <new>

#include "round_sync.h"

namespace {

const size_t huge = (size_t)1 << 62;
int handler_calls;

void counting_handler()
{
    handler_calls++;
    std::set_new_handler(nullptr); // the next failure throws
}

bool aligned(void *p, size_t a)
{
    return p && (uintptr_t)p % a == 0;
}

// Aligned new in all four forms, for every power of two from 1 to 4096.
int aligned_forms_ok(int *total)
{
    int ok = 0;
    for (size_t a = 1; a <= 4096; a <<= 1) {
        std::align_val_t al{a};
        void *p = ::operator new(24, al);
        ok += aligned(p, a);
        ::operator delete(p, 24, al);
        p = ::operator new[](40, al);
        ok += aligned(p, a);
        ::operator delete[](p, al);
        p = ::operator new(8, al, std::nothrow);
        ok += aligned(p, a);
        ::operator delete(p, al, std::nothrow);
        p = ::operator new[](1, al, std::nothrow);
        ok += aligned(p, a);
        ::operator delete[](p, al, std::nothrow);
        *total += 4;
    }
    return ok;
}

template <typename F> bool throws_bad_alloc(F f)
{
    try {
        volatile void *p = f();
        (void)p;
    } catch (const std::bad_alloc &) {
        return true;
    }
    return false;
}

// Each throwing form on a request no allocator can meet: bad_alloc, after calling the handler.
void throwing_forms(int *thrown, int *handled, int *total)
{
    std::align_val_t al{64};
    void *(*forms[])() = {
        [] { return ::operator new(huge); },
        [] { return ::operator new[](huge); },
        [] { return ::operator new(huge, std::align_val_t{64}); },
        [] { return ::operator new[](huge, std::align_val_t{64}); },
    };
    (void)al;
    for (auto form : forms) {
        handler_calls = 0;
        std::set_new_handler(counting_handler);
        *thrown += throws_bad_alloc(form);
        *handled += handler_calls == 1;
        (*total)++;
    }
    std::set_new_handler(nullptr);
}

// Each nothrow form on the same request: NULL, no exception.
int nothrow_forms_null(int *total)
{
    int ok = 0;
    void *(*forms[])() = {
        [] { return ::operator new(huge, std::nothrow); },
        [] { return ::operator new[](huge, std::nothrow); },
        [] { return ::operator new(huge, std::align_val_t{64}, std::nothrow); },
        [] { return ::operator new[](huge, std::align_val_t{64}, std::nothrow); },
    };
    for (auto form : forms) {
        try {
            ok += form() == nullptr;
        } catch (...) {
        }
        (*total)++;
    }
    return ok;
}

struct Tally {
    unsigned long mallocs = 0, frees = 0, malloc_bytes = 0, free_bytes = 0;
};

// Plain, array, sized and aligned blocks between two round ends, tallied as the allocator sizes
// them.
void counted_traffic(Tally *t)
{
    void *blocks[12];
    for (int i = 0; i < 12; i++) {
        size_t n = 100 + 300 * (size_t)i;
        blocks[i] = i % 3 == 0   ? ::operator new(n)
                    : i % 3 == 1 ? ::operator new[](n)
                                 : ::operator new(n, std::align_val_t{64});
        t->mallocs++;
        t->malloc_bytes += malloc_usable_size(blocks[i]);
    }
    for (int i = 0; i < 12; i++) {
        size_t n = 100 + 300 * (size_t)i;
        t->frees++;
        t->free_bytes += malloc_usable_size(blocks[i]);
        if (i % 3 == 0)
            ::operator delete(blocks[i], n);
        else if (i % 3 == 1)
            ::operator delete[](blocks[i]);
        else
            ::operator delete(blocks[i], std::align_val_t{64});
    }
}

} // namespace

extern "C" __attribute__((visibility("default"))) int cxx_semantics_run(int count_rounds)
{
    Tally t;
    bool counted = false;
    if (count_rounds && end_round_and_wait(0) == 0) {
        counted_traffic(&t);
        counted = end_round_and_wait(1) == 0;
    }
    int aligned_total = 0, throwing_total = 0, nothrow_total = 0, thrown = 0, handled = 0;
    int aligned_ok = aligned_forms_ok(&aligned_total);
    throwing_forms(&thrown, &handled, &throwing_total);
    int nothrow_null = nothrow_forms_null(&nothrow_total);
    printf("{\"aligned_ok\":%d,\"aligned_total\":%d,\"bad_alloc\":%d,\"handler_called\":%d,"
           "\"throwing_total\":%d,\"nothrow_null\":%d,\"nothrow_total\":%d,\"counted\":%s,"
           "\"malloc_calls\":%lu,\"free_calls\":%lu,\"malloc_bytes\":%lu,\"free_bytes\":%lu}\n",
           aligned_ok, aligned_total, thrown, handled, throwing_total, nothrow_null,
           nothrow_total, counted ? "true" : "false", t.mallocs, t.frees, t.malloc_bytes,
           t.free_bytes);
    fflush(stdout);
    return 0;
}
