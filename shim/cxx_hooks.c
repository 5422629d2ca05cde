/* C++ operator new and delete. With glibc, libstdc++'s operator new calls malloc, which the
 * malloc hooks count: these only forward. jemalloc, tcmalloc and mimalloc define operator new
 * themselves, beside their malloc: preloaded after roundtrim, their C++ allocations would go
 * uncounted. So when the next operator new lives in the same library as the next malloc, these
 * count too, unless the call came back through our malloc/free anyway (jemalloc's delete calls
 * free): this thread's counters, which nothing else changes, tell.
 *
 * A block's size is read only in that case: the block then surely comes from the allocator we
 * forward to (an allocator ahead of roundtrim may hand out blocks we cannot size). On the
 * jemalloc route (the thread's block reads jemalloc's counters) no size is read: the call is
 * counted and jemalloc's figure copied once the operator returned.
 *
 * Each call goes on to the operator its caller would have reached bare (runtime/alloc/
 * cxx_runtime.h), found from the caller's return address (runtime/alloc/cxx_callers.h): in one
 * process a libstdc++ library keeps libstdc++'s operators, a libc++ library libc++abi's (its
 * std::bad_alloc is the one its catch clauses know), a plugin the allocator its host opened
 * RTLD_GLOBAL (held loaded, as the plugin's own binding would hold it). Delete goes to the
 * operator its caller would reach bare, too. Where the global scope loaded at start has the
 * operators (libstdc++ linked with the program, a preloaded allocator), every caller shares that
 * answer and the return address is not looked at.
 *
 * The forwarding keeps C++ semantics: the next operator new throws std::bad_alloc through this
 * frame (the file is built with unwind tables), nothrow forms return NULL. The C++ runtime is
 * looked for until found, wherever the loader put it; until then each form does what the
 * standard asks of it on the malloc family (any power-of-two alignment; a throwing form calls the
 * new handler and throws, never returns NULL). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy/cxx_new.h"
#include "runtime/core/export.h"
#include "runtime/sites/sampler.h"
#include "runtime/alloc/thread_counters.h"
#include "runtime/alloc/next_alloc.h"
#include "runtime/alloc/cxx_callers.h"

enum cxx_op {
    NEW,
    NEW_ARRAY,
    NEW_NOTHROW,
    NEW_ARRAY_NOTHROW,
    NEW_ALIGNED,
    NEW_ARRAY_ALIGNED,
    NEW_ALIGNED_NOTHROW,
    NEW_ARRAY_ALIGNED_NOTHROW,
    DELETE,
    DELETE_ARRAY,
    DELETE_SIZED,
    DELETE_ARRAY_SIZED,
    DELETE_NOTHROW,
    DELETE_ARRAY_NOTHROW,
    DELETE_ALIGNED,
    DELETE_ARRAY_ALIGNED,
    DELETE_SIZED_ALIGNED,
    DELETE_ARRAY_SIZED_ALIGNED,
    DELETE_ALIGNED_NOTHROW,
    DELETE_ARRAY_ALIGNED_NOTHROW,
    CXX_OP_COUNT,
    /* The runtime's own parts the fallbacks need where it lacks a form. */
    GET_NEW_HANDLER = CXX_OP_COUNT,
    THROW_BAD_ALLOC,
    CXX_NAME_COUNT
};

/* Itanium C++ ABI names for 64-bit size_t. */
static const char *const op_names[CXX_NAME_COUNT] = {
    [NEW] = "_Znwm",
    [NEW_ARRAY] = "_Znam",
    [NEW_NOTHROW] = "_ZnwmRKSt9nothrow_t",
    [NEW_ARRAY_NOTHROW] = "_ZnamRKSt9nothrow_t",
    [NEW_ALIGNED] = "_ZnwmSt11align_val_t",
    [NEW_ARRAY_ALIGNED] = "_ZnamSt11align_val_t",
    [NEW_ALIGNED_NOTHROW] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
    [NEW_ARRAY_ALIGNED_NOTHROW] = "_ZnamSt11align_val_tRKSt9nothrow_t",
    [DELETE] = "_ZdlPv",
    [DELETE_ARRAY] = "_ZdaPv",
    [DELETE_SIZED] = "_ZdlPvm",
    [DELETE_ARRAY_SIZED] = "_ZdaPvm",
    [DELETE_NOTHROW] = "_ZdlPvRKSt9nothrow_t",
    [DELETE_ARRAY_NOTHROW] = "_ZdaPvRKSt9nothrow_t",
    [DELETE_ALIGNED] = "_ZdlPvSt11align_val_t",
    [DELETE_ARRAY_ALIGNED] = "_ZdaPvSt11align_val_t",
    [DELETE_SIZED_ALIGNED] = "_ZdlPvmSt11align_val_t",
    [DELETE_ARRAY_SIZED_ALIGNED] = "_ZdaPvmSt11align_val_t",
    [DELETE_ALIGNED_NOTHROW] = "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    [DELETE_ARRAY_ALIGNED_NOTHROW] = "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    [GET_NEW_HANDLER] = "_ZSt15get_new_handlerv",
    [THROW_BAD_ALLOC] = "_ZSt17__throw_bad_allocv",
};

_Static_assert(CXX_NAME_COUNT <= ROUNDTRIM_CXX_NAMES_MAX, "a binding holds every name");

/* Where calls returning to caller go (runtime/alloc/cxx_callers.h): one shared answer in the
 * common case, read as cheaply as a global. */
static inline const struct roundtrim_cxx_binding *binding(const void *caller)
{
    return roundtrim_cxx_binding_for(caller, op_names, CXX_NAME_COUNT);
}

/* The runtime's operators are not the next malloc's library's own (libstdc++ over glibc): nothing
 * is counted here (their malloc and free calls are), so the call goes straight on. */
static inline bool calls_reach_malloc(const struct roundtrim_cxx_binding *b)
{
    return !b->counts_here;
}

/* Where the exported operator returns to, inside the library whose call this is: taken in each
 * exported function itself and passed down. */
#define CALLER __builtin_return_address(0)

/* Counts a block the next operator new returned, unless it already went through our malloc.
 * The callers took this thread's block before the call (so that the jemalloc route's starting
 * figure excludes the block). */
static inline void *counted(bool counts_here, void *p, uint64_t calls_before)
{
    if (!p || !counts_here || roundtrim_in_next_alloc)
        return p;
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    if (c->malloc_calls != calls_before)
        return p;
    if (c->je_allocated)
        roundtrim_je_count_alloc(c);
    else
        roundtrim_count_block(p, roundtrim_usable_size(p));
    return p;
}

struct pending_free {
    uint64_t bytes, calls_before;
    size_t header; /* glibc's chunk header, read before the block is gone */
};

static inline struct pending_free before_delete(bool counts_here, void *p)
{
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    struct pending_free f = {0, c->free_calls, 0};
    if (p && counts_here && !roundtrim_in_next_alloc && !c->je_deallocated) {
        f.bytes = roundtrim_usable_size(p);
        if (roundtrim_glibc_sizes)
            f.header = roundtrim_glibc_header(p);
        roundtrim_sample_free_check(p);
    }
    return f;
}

static inline void after_delete(bool counts_here, void *p, struct pending_free f)
{
    if (!p || !counts_here || roundtrim_in_next_alloc)
        return;
    struct roundtrim_thread_counters *c = roundtrim_thread_block();
    if (c->free_calls != f.calls_before)
        return;
    if (c->je_deallocated)
        roundtrim_je_count_free(c);
    else {
        roundtrim_count_free(f.bytes);
        roundtrim_count_mmapped(c, f.header, f.bytes, true);
    }
}

/* Where the runtime lacks a form (or none is loaded yet, which no C++ caller can see), the
 * malloc family serves it, with the standard's rules. */
static void *aligned_block(size_t n, size_t align)
{
    size_t use = roundtrim_cxx_memalign_alignment(align);
    void *p = NULL;
    return use && posix_memalign(&p, use, roundtrim_cxx_request_bytes(n)) == 0 ? p : NULL;
}

static void *fallback_block(size_t n, size_t align)
{
    return align ? aligned_block(n, align) : malloc(roundtrim_cxx_request_bytes(n));
}

/* A throwing form that failed: the new handler may make room (then try again), else
 * std::bad_alloc. Without any C++ runtime in the process nothing could catch it: say so and
 * end as an uncaught exception would. */
static void *fallback_throwing(const struct roundtrim_cxx_binding *b, size_t n, size_t align)
{
    for (;;) {
        void *p = fallback_block(n, align);
        if (p)
            return p;
        void (*(*get_handler)(void))(void) = (void (*(*)(void))(void))b->op[GET_NEW_HANDLER];
        void (*handler)(void) = get_handler ? get_handler() : NULL;
        if (handler) {
            handler();
            continue;
        }
        void (*throw_bad_alloc)(void) = (void (*)(void))b->op[THROW_BAD_ALLOC];
        if (throw_bad_alloc)
            throw_bad_alloc();
        static const char msg[] =
            "roundtrim: operator new failed and no C++ runtime is loaded to throw std::bad_alloc\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
}

/* Each operator in two parts: where nothing is counted here (calls_reach_malloc), the runtime's
 * own operator is called at once; the rest (counting, or no runtime loaded) is a function of its
 * own, so that the direct call saves no registers for it. */
__attribute__((noinline)) static void *new_block_rest(const struct roundtrim_cxx_binding *b,
                                                      void *(*fn)(size_t), size_t n)
{
    uint64_t before = roundtrim_thread_block()->malloc_calls;
    return fn ? counted(b->counts_here, fn(n), before) : fallback_throwing(b, n, 0);
}

static inline void *new_block(const void *caller, enum cxx_op i, size_t n)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void *(*fn)(size_t) = (void *(*)(size_t))b->op[i];
    if (fn && calls_reach_malloc(b))
        return fn(n);
    return new_block_rest(b, fn, n);
}

__attribute__((noinline)) static void *new_block_nothrow_rest(const struct roundtrim_cxx_binding *b,
                                                              void *(*fn)(size_t, const void *),
                                                              size_t n, const void *tag)
{
    uint64_t before = roundtrim_thread_block()->malloc_calls;
    return fn ? counted(b->counts_here, fn(n, tag), before) : fallback_block(n, 0);
}

static inline void *new_block_nothrow(const void *caller, enum cxx_op i, size_t n, const void *tag)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void *(*fn)(size_t, const void *) = (void *(*)(size_t, const void *))b->op[i];
    if (fn && calls_reach_malloc(b))
        return fn(n, tag);
    return new_block_nothrow_rest(b, fn, n, tag);
}

__attribute__((noinline)) static void *new_aligned_rest(const struct roundtrim_cxx_binding *b,
                                                        void *(*fn)(size_t, size_t), size_t n,
                                                        size_t align)
{
    uint64_t before = roundtrim_thread_block()->malloc_calls;
    return fn ? counted(b->counts_here, fn(n, align), before) : fallback_throwing(b, n, align);
}

static inline void *new_aligned(const void *caller, enum cxx_op i, size_t n, size_t align)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t))b->op[i];
    if (fn && calls_reach_malloc(b))
        return fn(n, align);
    return new_aligned_rest(b, fn, n, align);
}

__attribute__((noinline)) static void *
new_aligned_nothrow_rest(const struct roundtrim_cxx_binding *b,
                         void *(*fn)(size_t, size_t, const void *), size_t n, size_t align,
                         const void *tag)
{
    uint64_t before = roundtrim_thread_block()->malloc_calls;
    return fn ? counted(b->counts_here, fn(n, align, tag), before) : fallback_block(n, align);
}

static inline void *new_aligned_nothrow(const void *caller, enum cxx_op i, size_t n, size_t align,
                                        const void *tag)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void *(*fn)(size_t, size_t, const void *) = (void *(*)(size_t, size_t, const void *))b->op[i];
    if (fn && calls_reach_malloc(b))
        return fn(n, align, tag);
    return new_aligned_nothrow_rest(b, fn, n, align, tag);
}

__attribute__((noinline)) static void delete_block_rest(const struct roundtrim_cxx_binding *b,
                                                        void (*fn)(void *), void *p)
{
    struct pending_free f = before_delete(b->counts_here, p);
    fn ? fn(p) : free(p);
    after_delete(b->counts_here, p, f);
}

static inline void delete_block(const void *caller, enum cxx_op i, void *p)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void (*fn)(void *) = (void (*)(void *))b->op[i];
    if (fn && calls_reach_malloc(b))
        fn(p);
    else
        delete_block_rest(b, fn, p);
}

__attribute__((noinline)) static void delete_block2_rest(const struct roundtrim_cxx_binding *b,
                                                         void (*fn)(void *, size_t), void *p,
                                                         size_t a)
{
    struct pending_free f = before_delete(b->counts_here, p);
    fn ? fn(p, a) : free(p);
    after_delete(b->counts_here, p, f);
}

static inline void delete_block2(const void *caller, enum cxx_op i, void *p, size_t a)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void (*fn)(void *, size_t) = (void (*)(void *, size_t))b->op[i];
    if (fn && calls_reach_malloc(b))
        fn(p, a);
    else
        delete_block2_rest(b, fn, p, a);
}

__attribute__((noinline)) static void delete_block_ptr_rest(const struct roundtrim_cxx_binding *b,
                                                            void (*fn)(void *, const void *),
                                                            void *p, const void *tag)
{
    struct pending_free f = before_delete(b->counts_here, p);
    fn ? fn(p, tag) : free(p);
    after_delete(b->counts_here, p, f);
}

static inline void delete_block_ptr(const void *caller, enum cxx_op i, void *p, const void *tag)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void (*fn)(void *, const void *) = (void (*)(void *, const void *))b->op[i];
    if (fn && calls_reach_malloc(b))
        fn(p, tag);
    else
        delete_block_ptr_rest(b, fn, p, tag);
}

__attribute__((noinline)) static void delete_block3_rest(const struct roundtrim_cxx_binding *b,
                                                         void (*fn)(void *, size_t, size_t),
                                                         void *p, size_t a, size_t b2)
{
    struct pending_free f = before_delete(b->counts_here, p);
    fn ? fn(p, a, b2) : free(p);
    after_delete(b->counts_here, p, f);
}

static inline void delete_block3(const void *caller, enum cxx_op i, void *p, size_t a, size_t b2)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void (*fn)(void *, size_t, size_t) = (void (*)(void *, size_t, size_t))b->op[i];
    if (fn && calls_reach_malloc(b))
        fn(p, a, b2);
    else
        delete_block3_rest(b, fn, p, a, b2);
}

__attribute__((noinline)) static void
delete_block_aligned_ptr_rest(const struct roundtrim_cxx_binding *b,
                              void (*fn)(void *, size_t, const void *), void *p, size_t align,
                              const void *tag)
{
    struct pending_free f = before_delete(b->counts_here, p);
    fn ? fn(p, align, tag) : free(p);
    after_delete(b->counts_here, p, f);
}

static inline void delete_block_aligned_ptr(const void *caller, enum cxx_op i, void *p,
                                            size_t align, const void *tag)
{
    const struct roundtrim_cxx_binding *b = binding(caller);
    void (*fn)(void *, size_t, const void *) = (void (*)(void *, size_t, const void *))b->op[i];
    if (fn && calls_reach_malloc(b))
        fn(p, align, tag);
    else
        delete_block_aligned_ptr_rest(b, fn, p, align, tag);
}

ROUNDTRIM_EXPORT void *_Znwm(size_t n)
{
    return new_block(CALLER, NEW, n);
}

ROUNDTRIM_EXPORT void *_Znam(size_t n)
{
    return new_block(CALLER, NEW_ARRAY, n);
}

ROUNDTRIM_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag)
{
    return new_block_nothrow(CALLER, NEW_NOTHROW, n, tag);
}

ROUNDTRIM_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag)
{
    return new_block_nothrow(CALLER, NEW_ARRAY_NOTHROW, n, tag);
}

ROUNDTRIM_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t align)
{
    return new_aligned(CALLER, NEW_ALIGNED, n, align);
}

ROUNDTRIM_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t align)
{
    return new_aligned(CALLER, NEW_ARRAY_ALIGNED, n, align);
}

ROUNDTRIM_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    return new_aligned_nothrow(CALLER, NEW_ALIGNED_NOTHROW, n, align, tag);
}

ROUNDTRIM_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    return new_aligned_nothrow(CALLER, NEW_ARRAY_ALIGNED_NOTHROW, n, align, tag);
}

ROUNDTRIM_EXPORT void _ZdlPv(void *p)
{
    delete_block(CALLER, DELETE, p);
}

ROUNDTRIM_EXPORT void _ZdaPv(void *p)
{
    delete_block(CALLER, DELETE_ARRAY, p);
}

ROUNDTRIM_EXPORT void _ZdlPvm(void *p, size_t n)
{
    delete_block2(CALLER, DELETE_SIZED, p, n);
}

ROUNDTRIM_EXPORT void _ZdaPvm(void *p, size_t n)
{
    delete_block2(CALLER, DELETE_ARRAY_SIZED, p, n);
}

ROUNDTRIM_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
    delete_block_ptr(CALLER, DELETE_NOTHROW, p, tag);
}

ROUNDTRIM_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
    delete_block_ptr(CALLER, DELETE_ARRAY_NOTHROW, p, tag);
}

ROUNDTRIM_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align)
{
    delete_block2(CALLER, DELETE_ALIGNED, p, align);
}

ROUNDTRIM_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align)
{
    delete_block2(CALLER, DELETE_ARRAY_ALIGNED, p, align);
}

ROUNDTRIM_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t align)
{
    delete_block3(CALLER, DELETE_SIZED_ALIGNED, p, n, align);
}

ROUNDTRIM_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t align)
{
    delete_block3(CALLER, DELETE_ARRAY_SIZED_ALIGNED, p, n, align);
}

ROUNDTRIM_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
    delete_block_aligned_ptr(CALLER, DELETE_ALIGNED_NOTHROW, p, align, tag);
}

ROUNDTRIM_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
    delete_block_aligned_ptr(CALLER, DELETE_ARRAY_ALIGNED_NOTHROW, p, align, tag);
}
