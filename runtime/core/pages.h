/* Memory of roundtrim's own, straight from the kernel: never from malloc, which is what roundtrim
 * counts (and may be running inside of). Pages nobody touches cost nothing. */
#ifndef ROUNDTRIM_RUNTIME_CORE_PAGES_H
#define ROUNDTRIM_RUNTIME_CORE_PAGES_H

#include <stddef.h>

/* bytes of zeroed, private, read-write memory; NULL when the kernel refuses. */
void *roundtrim_pages_map(size_t bytes);

/* Gives back what roundtrim_pages_map returned (the same size). */
void roundtrim_pages_unmap(void *p, size_t bytes);

#endif
