/* The lines of this process's /proc/thread-self/maps (or /proc/self/maps), or the records of
 * another /proc file, one at a time. */
#ifndef ROUNDTRIM_RUNTIME_CORE_MAPS_LINES_H
#define ROUNDTRIM_RUNTIME_CORE_MAPS_LINES_H

#include <stdbool.h>

/* Calls each(ctx, line) for every line, without its newline (a line longer than 4 KiB, a long
 * path, is dropped). False when the maps could not be opened or read to the end. */
bool roundtrim_maps_lines(void (*each)(void *ctx, const char *line), void *ctx);

/* The same for any file of records ended by `end` ('\n' for lines, '\0' for /proc/PID/environ),
 * opened as roundtrim_open_read does (a regular file only, no symlink followed). */
bool roundtrim_file_records(const char *path, char end, void (*each)(void *ctx, const char *rec),
                            void *ctx);

/* The same for a descriptor from roundtrim_open_read, which it closes. */
bool roundtrim_fd_records(int fd, char end, void (*each)(void *ctx, const char *rec), void *ctx);

#endif
