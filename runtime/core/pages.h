/* Memory of roundtrim's own, straight from the kernel: never from malloc, which is what roundtrim
 * counts (and may be running inside of). Pages nobody touches cost nothing. */
#ifndef ROUNDTRIM_RUNTIME_CORE_PAGES_H
#define ROUNDTRIM_RUNTIME_CORE_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* bytes of zeroed, private, read-write memory; NULL when the kernel refuses. */
void *roundtrim_pages_map(size_t bytes);

/* Gives back what roundtrim_pages_map returned (the same size). */
void roundtrim_pages_unmap(void *p, size_t bytes);

/* The mappings are kept in this many slots, so that roundtrim's own memory can be told from the
 * program's (runtime/core/pages_resident.h). */
#define ROUNDTRIM_PAGES_MAPS_MAX 128

/* Slot i's mapping, if one is there now. */
bool roundtrim_pages_mapping(int i, uintptr_t *start, size_t *bytes);

/* The bytes of mappings made while every slot was taken (counted whole). */
uint64_t roundtrim_pages_untracked(void);

#endif
