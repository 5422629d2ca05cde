/* Which loaded object holds an address, from the loader's list of objects and their segments:
 * a few comparisons per object. dladdr answers the same and more, but searches the object's
 * whole symbol table for the nearest symbol, which at start would cost every process of a
 * container about 180,000 instructions. */
#ifndef ROUNDTRIM_RUNTIME_CORE_LOADED_OBJECT_H
#define ROUNDTRIM_RUNTIME_CORE_LOADED_OBJECT_H

#include <stdbool.h>
#include <stdint.h>

struct roundtrim_loaded_object {
    const char *path;  /* as the loader knows it; "" for the main program */
    uintptr_t bias;    /* the load bias: with path, tells one object from another */
    bool main_program; /* the executable itself */
};

/* False when no loaded object maps addr. */
bool roundtrim_loaded_object_of(const void *addr, struct roundtrim_loaded_object *out);

/* Whether the object's path names glibc's libc.so. */
bool roundtrim_loaded_object_is_libc(const struct roundtrim_loaded_object *obj);

/* Whether a and b are the same loaded object. */
bool roundtrim_loaded_object_same(const struct roundtrim_loaded_object *a,
                                  const struct roundtrim_loaded_object *b);

#endif
