/* Calls operator new and delete, by their symbols, from a C program that has no C++ runtime yet
 * (only roundtrim defines them), then opens libstdc++ privately (RTLD_LOCAL: out of dlsym's
 * RTLD_NEXT reach) and calls them again. Prints what held:
 *   before: aligned=<ok>/<total> nothrow_null=<0|1>
 *   after: handler=<calls> (libstdc++'s throwing new calls the new handler set in libstdc++) */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>

typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);
typedef void *(*new_fn)(size_t);
typedef void (*delete_aligned_fn)(void *, size_t);
typedef void (*handler_fn)(void);

static jmp_buf escape;
static int handler_calls;

static void handler(void)
{
    handler_calls++;
    longjmp(escape, 1); /* leaves operator new without it throwing */
}

int main(void)
{
    new_aligned_fn new_aligned = (new_aligned_fn)dlsym(RTLD_DEFAULT, "_ZnwmSt11align_val_t");
    new_aligned_nothrow_fn new_nothrow =
        (new_aligned_nothrow_fn)dlsym(RTLD_DEFAULT, "_ZnwmSt11align_val_tRKSt9nothrow_t");
    delete_aligned_fn del = (delete_aligned_fn)dlsym(RTLD_DEFAULT, "_ZdlPvSt11align_val_t");
    if (!new_aligned || !new_nothrow || !del) {
        puts("no operator new to call");
        return 0;
    }
    int ok = 0, total = 0;
    char tag = 0;
    for (size_t a = 1; a <= 4096; a <<= 1, total++) {
        void *p = new_aligned(24, a);
        ok += p && (uintptr_t)p % a == 0;
        del(p, a);
    }
    int nothrow_null = new_nothrow((size_t)1 << 62, 64, &tag) == NULL;
    printf("before: aligned=%d/%d nothrow_null=%d\n", ok, total, nothrow_null);

    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    handler_fn (*set_handler)(handler_fn) =
        cxx ? (handler_fn(*)(handler_fn))dlsym(cxx, "_ZSt15set_new_handlerPFvvE") : NULL;
    new_fn plain_new = (new_fn)dlsym(RTLD_DEFAULT, "_Znwm");
    if (!set_handler || !plain_new) {
        puts("after: no libstdc++");
        return 0;
    }
    set_handler(handler);
    if (setjmp(escape) == 0)
        (void)plain_new((size_t)1 << 62);
    set_handler(NULL);
    printf("after: handler=%d\n", handler_calls);
    return 0;
}
