/* The memory CPython's small-object allocator (pymalloc) maps for its arenas, directly with mmap,
 * outside malloc: a leak of small Python objects grows it, not the malloc heap. Counted from the
 * interpreter's own mmap and munmap calls (shim/mmap_hooks.c). */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_ARENAS_H
#define ROUNDTRIM_RUNTIME_PYTHON_ARENAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/skip_reason.h"
#include "runtime/python/api.h"

/* Notes where the interpreter's code lies (called once its API is found). */
void roundtrim_python_arenas_init(const struct roundtrim_py_api *api);

/* An anonymous private mapping made (mapped) or removed (!mapped) by code at `caller`: counted
 * when the caller is the interpreter's own code. Async-signal-safe: a compare and an atomic add. */
void roundtrim_python_arena_note(const void *caller, size_t len, bool mapped);

/* Bytes mapped for pymalloc's arenas now; RT_SKIP_NONE, or why not known (no_python, ...). */
enum roundtrim_skip roundtrim_python_arena_bytes(uint64_t *bytes);

/* A fork child keeps its parent's arenas: nothing to reset. */

#endif
