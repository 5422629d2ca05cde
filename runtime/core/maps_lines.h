/* The lines of this process's /proc/thread-self/maps (or /proc/self/maps), one at a time. */
#ifndef ROUNDTRIM_RUNTIME_CORE_MAPS_LINES_H
#define ROUNDTRIM_RUNTIME_CORE_MAPS_LINES_H

#include <stdbool.h>

/* Calls each(ctx, line) for every line, without its newline (a line longer than 4 KiB, a long
 * path, is dropped). False when the maps could not be opened or read to the end. */
bool roundtrim_maps_lines(void (*each)(void *ctx, const char *line), void *ctx);

#endif
