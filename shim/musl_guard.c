/* The two definitions by which musl's loader declines the library (shim/musl_guard.h). No
 * <stdio.h> here: this file defines a stdin of its own, and nothing else of the library may
 * refer to stdin (it would bind to this one). */
#include "shim/musl_guard.h"

#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"

/* A FILE * like glibc's; non-zero address and a definition are all musl looks at. */
ROUNDTRIM_EXPORT void *roundtrim_stdin_stand_in __asm__("stdin");

typedef int (*start_main_fn)(int (*)(int, char **, char **), int, char **, void (*)(void),
                             void (*)(void), void (*)(void), void *);

ROUNDTRIM_EXPORT int roundtrim_start_main_stand_in(int (*main_fn)(int, char **, char **), int argc,
                                                   char **argv, void (*init)(void),
                                                   void (*fini)(void), void (*rtld_fini)(void),
                                                   void *stack_end) __asm__("__libc_start_main");

int roundtrim_start_main_stand_in(int (*main_fn)(int, char **, char **), int argc, char **argv,
                                  void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
                                  void *stack_end)
{
    start_main_fn next = (start_main_fn)roundtrim_next_symbol("__libc_start_main");
    return next(main_fn, argc, argv, init, fini, rtld_fini, stack_end);
}

void roundtrim_musl_guard_start(void)
{
    void **real = roundtrim_next_symbol("stdin");
    if (real)
        roundtrim_stdin_stand_in = *real;
}
