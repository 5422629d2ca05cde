/* libc's own dlsym, for roundtrim's lookups and for the dlsym trampoline (shim/) to forward to:
 * the exported dlsym is roundtrim's, so every part of the library that needs a lookup of its own
 * goes through this one. */
#ifndef ROUNDTRIM_RUNTIME_CORE_REAL_DLSYM_H
#define ROUNDTRIM_RUNTIME_CORE_REAL_DLSYM_H

typedef void *(*roundtrim_dlsym_fn)(void *, const char *);

/* The real dlsym (resolved lazily with dlvsym); NULL while it cannot be resolved. */
roundtrim_dlsym_fn roundtrim_real_dlsym(void);

/* A failed lookup leaves its message for the thread's next dlerror(), and a later dlsym of the
 * program's frees it there: roundtrim's own failures must never reach the program (its dlerror,
 * its counted frees). This discards the thread's pending result without formatting it; it does
 * nothing (and costs nothing) while roundtrim has asked the loader nothing that may fail. */
void roundtrim_dlerror_forget(void);

/* Says that roundtrim asked the loader something that may fail other than through the real dlsym
 * (a dlopen of its own), so that roundtrim_dlerror_forget does its work. */
void roundtrim_dlerror_note(void);

/* The next definition of name after roundtrim's (dlsym(RTLD_NEXT, name) asked from this library):
 * from the loader's tables where they are sure (runtime/core/loader_tables.h), else through the
 * real dlsym; NULL when there is none or the real dlsym cannot be resolved yet. A lookup that
 * fails leaves nothing for dlerror(). */
void *roundtrim_next_symbol(const char *name);

/* dlsym(RTLD_DEFAULT, name) asked from this library, the same way. */
void *roundtrim_default_symbol(const char *name);

#endif
