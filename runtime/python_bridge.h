/* The embedded CPython interpreter, when the process has one: gc, the PyTorch cache, round hooks.
 */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_BRIDGE_H
#define ROUNDTRIM_RUNTIME_PYTHON_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

/* Called once from the library constructor with ROUNDTRIM_PY_HOOK (or NULL). */
void roundtrim_python_init(const char *hook_spec);

/* True when the process runs an initialized CPython interpreter. */
bool roundtrim_python_present(void);

/* Full gc.collect(); false when there is no interpreter. */
bool roundtrim_python_gc(uint64_t *collected, uint64_t *us);

/* torch.cuda.empty_cache(), only when the program imported torch and initialized CUDA itself. */
bool roundtrim_python_torch_empty_cache(uint64_t *us);

#endif
