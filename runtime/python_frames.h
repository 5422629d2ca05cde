/* The calling thread's Python frames, read from the interpreter's own structures. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_FRAMES_H
#define ROUNDTRIM_RUNTIME_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/python_api.h"

struct roundtrim_py_frame {
    const void *code;
    int line;
};

void roundtrim_python_frames_init(const struct roundtrim_py_api *api);
const char *roundtrim_python_frames_unavailable(void);
int roundtrim_python_stack(struct roundtrim_py_frame *out, int max);
bool roundtrim_python_code_names(const void *code, char *file, size_t file_len, char *func,
                                 size_t func_len);

#endif
