/* Whether a running code object is the program's own code (policy/code_origin.h's rule on its
 * file name), remembered per code object: a sample reads it for every frame of its stack. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_CODE_ORIGIN_H
#define ROUNDTRIM_RUNTIME_PYTHON_CODE_ORIGIN_H

#include <stdbool.h>
#include <stdint.h>

/* For a code object on the calling thread's stack, with its names_key (struct
 * roundtrim_py_frame). Only reads memory; no lock, no allocation: safe inside malloc. */
bool roundtrim_python_code_is_program(const void *code, uint32_t names_key);

#endif
