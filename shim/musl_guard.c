/* What keeps a musl image's programs unharmed by LD_PRELOAD=libroundtrim.so (the library is
 * built for glibc: under musl its glibc-only symbols cannot be bound, and musl's loader then ends
 * the program before main).
 *
 * musl's loader (ldso/dynlink.c, load_library, since musl 1.1.17) takes a library that defines
 * both __libc_start_main and stdin for another copy of a libc, and loads its own libc in its
 * place: a preload that does so is never mapped and the program runs as if it were not there.
 * The library defines the two for that alone, under a version of its own (shim/musl_guard.map),
 * so that glibc never binds a program's references (versioned GLIBC_x) to them. Only a lookup
 * by name without a version in the whole process scope (dlsym(RTLD_DEFAULT or dlopen(NULL),
 * "stdin")) can reach them: there they hold what glibc's hold (stdin's value as at the start,
 * a __libc_start_main that forwards to glibc's).
 *
 * No <stdio.h> here: this file defines a stdin of its own, and nothing else of the library may
 * refer to stdin (it would bind to this one). */
#include "runtime/core/export.h"
#include "runtime/core/real_dlsym.h"

/* glibc's stdin points at _IO_2_1_stdin_ until the program assigns it another stream: the
 * stand-in holds that value from the loader's relocation on, before any constructor runs
 * (another preloaded library's may look stdin up by name). musl only looks for a defined,
 * non-zero address. */
extern char _IO_2_1_stdin_[];
ROUNDTRIM_EXPORT void *roundtrim_stdin_stand_in __asm__("stdin") = _IO_2_1_stdin_;

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
