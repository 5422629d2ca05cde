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
 * a __libc_start_main that forwards to glibc's). */
#ifndef ROUNDTRIM_SHIM_MUSL_GUARD_H
#define ROUNDTRIM_SHIM_MUSL_GUARD_H

/* From the constructor, under glibc: the stand-in stdin takes the value of glibc's. */
void roundtrim_musl_guard_start(void);

#endif
