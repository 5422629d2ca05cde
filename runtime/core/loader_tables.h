/* dlsym's answers for roundtrim's own lookups, read from the loader's symbol tables of the objects
 * loaded with the program, where they are certainly the loader's answers.
 *
 * Every process of a container pays roundtrim's start, and its lookups (the functions the hooks
 * forward to, the allocator's functions, the Python probe) were about 40% of it: each dlsym goes
 * through the loader's lock, its error handling and its search of every object (some 950
 * instructions), a failed one allocates and leaves a message for the program's dlerror(), and the
 * allocator's functions needed a dlopen of libc (some 9,000). The objects loaded with the program
 * never move or go away and the loader searches them in the order they were loaded, so their hash
 * tables give the same answers for less than half of that, with no lock, allocation or message.
 *
 * RT_SYM_ASK_LOADER says that the tables cannot be sure: the caller asks dlsym, as before. That is
 * the answer for everything unusual: roundtrim opened after the start (dlopen), objects opened
 * later that a lookup would reach, auditing (LD_AUDIT, DT_AUDIT), LD_DEBUG (its lines would be
 * missing), LD_DYNAMIC_WEAK, filter objects, a secure-exec process, an architecture other than
 * x86-64 and aarch64, symbols that need the loader's own work (IFUNC, TLS, unique and absolute
 * symbols), and an RTLD_NEXT name whose answer depends on the glibc release (2.36 made RTLD_NEXT
 * prefer an object's default version, as dlsym(handle) and RTLD_DEFAULT always did). Every answer
 * is checked against dlsym's for every name of every loaded object by
 * tests/programs/libloader_tables_check.c (tests/integration/test_startup.py). */
#ifndef ROUNDTRIM_RUNTIME_CORE_LOADER_TABLES_H
#define ROUNDTRIM_RUNTIME_CORE_LOADER_TABLES_H

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/core/loaded_object.h"

enum roundtrim_symbol_answer {
    RT_SYM_ASK_LOADER, /* not sure: ask dlsym */
    RT_SYM_FOUND,      /* dlsym would return *out */
    RT_SYM_ABSENT,     /* dlsym would return NULL (only while nothing was loaded since the start) */
};

struct roundtrim_symbol {
    void *addr;
    const ElfW(Sym) * sym;                /* the entry in its object's table */
    struct roundtrim_loaded_object where; /* the object that has it */
};

/* Whether an answer settles the lookup, with *out the address (NULL for RT_SYM_ABSENT); false:
 * ask the loader. */
static inline bool roundtrim_symbol_settled(enum roundtrim_symbol_answer a,
                                            const struct roundtrim_symbol *s, void **out)
{
    *out = a == RT_SYM_FOUND ? s->addr : NULL;
    return a != RT_SYM_ASK_LOADER;
}

/* dlsym(RTLD_NEXT, name) asked from this library. */
enum roundtrim_symbol_answer roundtrim_tables_next(const char *name, struct roundtrim_symbol *out);

/* dlsym(RTLD_DEFAULT, name) asked from this library. */
enum roundtrim_symbol_answer roundtrim_tables_default(const char *name,
                                                      struct roundtrim_symbol *out);

/* The first object after the executable, in the loader's order and up to the loader itself (the
 * vDSO left out), whose own table has name: what dlsym(dlopen(path of that object), name) finds
 * in the object itself. Never RT_SYM_ABSENT: the loader answers what the tables do not find. */
enum roundtrim_symbol_answer roundtrim_tables_first_after_main(const char *name,
                                                               struct roundtrim_symbol *out);

/* dlsym(handle, name) for the handle of the object obj (the object, then its dependencies breadth
 * first); RT_SYM_ASK_LOADER for the executable and for the loader itself. */
enum roundtrim_symbol_answer roundtrim_tables_in_object(const struct roundtrim_loaded_object *obj,
                                                        const char *name,
                                                        struct roundtrim_symbol *out);

/* The definition of name in the object info describes, in its own table only (not its
 * dependencies), for any loaded object, whenever it was loaded: call it where the object cannot
 * go away (inside a dl_iterate_phdr callback). RT_SYM_ASK_LOADER where the loader's own work
 * would be needed. */
enum roundtrim_symbol_answer roundtrim_tables_own_definition(const struct dl_phdr_info *info,
                                                             const char *name,
                                                             struct roundtrim_symbol *out);

/* The object's DT_SONAME (NULL: none), and the name of its k-th DT_NEEDED entry (NULL past the
 * last or where the dynamic section cannot be read), for any loaded object: call them where the
 * object cannot go away. They let a caller follow an object's dependencies as the loader does. */
const char *roundtrim_tables_soname(const struct dl_phdr_info *info);
const char *roundtrim_tables_needed(const struct dl_phdr_info *info, unsigned k);

/* Which of the objects the tables describe maps addr (what roundtrim_loaded_object_of answers),
 * without a walk of the loader's list; false when none does or the tables were not built (this
 * never builds them). */
bool roundtrim_tables_owner(const void *addr, struct roundtrim_loaded_object *out);

#endif
