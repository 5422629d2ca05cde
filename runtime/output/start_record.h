/* The first record of a process's log: who it is and every setting in force, with its origin. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_START_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_START_RECORD_H

#include <stddef.h>

size_t roundtrim_start_record_format(char *buf, size_t cap);

#endif
