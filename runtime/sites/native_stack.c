#include "runtime/sites/native_stack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "runtime/core/real_dlsym.h"

#if defined(__x86_64__)
#include <ucontext.h>
/* libunwind's step loop, by its x86-64 names (the unw_* names are macros of its header, which
 * roundtrim does not build with). A cursor is UNW_TDEP_CURSOR_LEN (127) words there; the
 * context is a ucontext_t. */
#define CURSOR_WORDS 127
#define REG_IP       16 /* UNW_X86_64_RIP, UNW_REG_IP */
struct step_loop {
    int (*getcontext)(ucontext_t *);
    int (*init_local)(void *cursor, ucontext_t *);
    int (*step)(void *cursor);
    int (*get_reg)(void *cursor, int reg, uint64_t *value);
};
static struct step_loop step_fn;
#endif

static int (*backtrace_fn)(void **, int);
static pthread_key_t place_key;
static bool place_key_ok;
static unsigned places_taken; /* threads holding a fast-trace place */

static __thread bool thread_fast;        /* the thread holds a place */
static __thread uint32_t thread_samples; /* walks taken while on the step loop */

static void place_given_back(void *arg)
{
    (void)arg;
    __atomic_sub_fetch(&places_taken, 1, __ATOMIC_RELAXED);
}

bool roundtrim_native_stack_init(void)
{
    /* RTLD_LOCAL: libunwind also defines the _Unwind_* functions C++ exceptions use; loaded
     * globally into every process it would take them over from libgcc. libgcc's unwinder is no
     * substitute: it takes a lock of its own and may allocate while holding it (frames
     * registered by a JIT), and a sample taken there would wait on itself. */
    roundtrim_dlerror_note();
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    roundtrim_dlsym_fn lookup = roundtrim_real_dlsym();
    if (h && lookup) {
        backtrace_fn = (int (*)(void **, int))lookup(h, "unw_backtrace");
#if defined(__x86_64__)
        step_fn.getcontext = (int (*)(ucontext_t *))lookup(h, "_Ux86_64_getcontext");
        step_fn.init_local = (int (*)(void *, ucontext_t *))lookup(h, "_ULx86_64_init_local");
        step_fn.step = (int (*)(void *))lookup(h, "_ULx86_64_step");
        step_fn.get_reg = (int (*)(void *, int, uint64_t *))lookup(h, "_ULx86_64_get_reg");
        if (!step_fn.getcontext || !step_fn.init_local || !step_fn.step || !step_fn.get_reg)
            step_fn.getcontext = NULL;
#endif
    }
    roundtrim_dlerror_forget();
    place_key_ok = pthread_key_create(&place_key, place_given_back) == 0;
    return backtrace_fn != NULL;
}

#if defined(__x86_64__)
static int walk_steps(void **ips, int max)
{
    ucontext_t context;
    uint64_t cursor[CURSOR_WORDS] __attribute__((aligned(16)));
    if (step_fn.getcontext(&context) < 0 || step_fn.init_local(cursor, &context) < 0)
        return 0;
    int n = 0;
    uint64_t ip;
    while (n < max && step_fn.step(cursor) > 0 && step_fn.get_reg(cursor, REG_IP, &ip) >= 0)
        ips[n++] = (void *)(uintptr_t)ip;
    return n;
}

/* Takes a fast-trace place for the calling thread if one is free; it is given back by the
 * thread's exit (the key's destructor), when libunwind frees the thread's cache too. */
static bool take_place(void)
{
    if (!place_key_ok)
        return false;
    unsigned taken = __atomic_load_n(&places_taken, __ATOMIC_RELAXED);
    do {
        if (taken >= ROUNDTRIM_NATIVE_FAST_THREADS)
            return false;
    } while (!__atomic_compare_exchange_n(&places_taken, &taken, taken + 1, true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    if (pthread_setspecific(place_key, &places_taken) != 0) {
        __atomic_sub_fetch(&places_taken, 1, __ATOMIC_RELAXED);
        return false;
    }
    return true;
}

/* Whether the calling thread walks with the fast trace now: after its first few samples, when
 * it holds a place (asked for again every few samples while none is free). */
static bool walks_fast(void)
{
    if (thread_fast)
        return true;
    if (++thread_samples % ROUNDTRIM_NATIVE_SLOW_SAMPLES != 0 || !take_place())
        return false;
    thread_fast = true;
    return true;
}
#endif

int roundtrim_native_stack(void **ips, int max)
{
    if (!backtrace_fn || max <= 0)
        return 0;
#if defined(__x86_64__)
    /* Without the step loop (another architecture, or its names missing) every thread walks
     * fast, with a cache each. */
    if (step_fn.getcontext && !walks_fast())
        return walk_steps(ips, max);
#endif
    return backtrace_fn(ips, max);
}

unsigned roundtrim_native_fast_threads(void)
{
    return __atomic_load_n(&places_taken, __ATOMIC_RELAXED);
}

void roundtrim_native_stack_fork_child(void)
{
    places_taken = thread_fast ? 1 : 0;
}
