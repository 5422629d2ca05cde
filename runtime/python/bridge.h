/* The embedded CPython interpreter, when the process has one: gc, the PyTorch cache, round hooks.
 */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_BRIDGE_H
#define ROUNDTRIM_RUNTIME_PYTHON_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* Called once at start with ROUNDTRIM_PY_HOOK (or NULL): installs the round hooks when the
 * process runs CPython. True when it does. */
bool roundtrim_python_init(const char *hook_spec);

/* True when the process has libpython (an interpreter running, not yet started or finalized). */
bool roundtrim_python_loaded(void);

/* Whether the interpreter's library was found already (no lookup: safe on the exit path). */
bool roundtrim_python_found(void);

/* The process is ending (exit or _exit): a gc waiting for the GIL gives up ("exiting") and no
 * job starts any more. */
void roundtrim_python_exiting(void);

/* An embedder calls Py_FinalizeEx or Py_Finalize (shim/py_finalize.c), on its thread holding the
 * GIL: begin before the interpreter finalizes (no job of ours is left waiting for the GIL, and none
 * starts), end after (the next interpreter gets jobs again). */
void roundtrim_python_finalize_begin(void);
void roundtrim_python_finalize_end(void);

/* An exec begins (true) or failed (false): see roundtrim_py_gil_exec. */
void roundtrim_python_exec(bool begun);

/* True when the process runs an initialized CPython interpreter. */
bool roundtrim_python_present(void);

/* Full gc.collect(). Returns RT_SKIP_NONE when it ran, else why not (no_python,
 * no_interpreter, or one of roundtrim_py_with_gil's reasons). */
enum roundtrim_skip roundtrim_python_gc(uint64_t *collected, uint64_t *us);

/* What the last roundtrim_python_gc freed in small objects (pymalloc blocks), in bytes: 0 when
 * the interpreter does not say how many blocks are allocated. */
uint64_t roundtrim_python_gc_small_freed(void);

/* torch.cuda.empty_cache(), only when the program imported torch and initialized CUDA itself.
 * Returns RT_SKIP_NONE when it ran, else why not (as roundtrim_python_gc, or no_torch,
 * cuda_not_initialized, cuda_capture). */
enum roundtrim_skip roundtrim_python_torch_empty_cache(uint64_t *us);

/* A torch step's reason to skip when that is news, else RT_SKIP_NONE: not in processes without
 * Python or torch, or whose torch never initialised CUDA (the common case, said every round
 * otherwise). */
enum roundtrim_skip roundtrim_python_torch_news(enum roundtrim_skip why);

/* torch.cuda.memory_allocated() and memory_reserved(), only when the program imported torch and
 * initialized CUDA itself. RT_SKIP_NONE when read, else why not (as
 * roundtrim_python_torch_empty_cache). */
enum roundtrim_skip roundtrim_python_torch_memory(uint64_t *allocated, uint64_t *reserved);

#endif
