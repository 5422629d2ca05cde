/* CuPy's memory pools, in a program that imported CuPy itself: the device pool keeps the blocks
 * the program freed (they look live to the driver hooks), the pinned pool its page-locked host
 * buffers. Read and released through the Python helper, as PyTorch's cache is
 * (runtime/python/bridge.h); never an import, never a pool of our own. */
#ifndef ROUNDTRIM_RUNTIME_PYTHON_CUPY_POOLS_H
#define ROUNDTRIM_RUNTIME_PYTHON_CUPY_POOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/skip_reason.h"

/* The device pool's cached bytes (held from the driver, not used by an array) on the program's
 * current device. RT_SKIP_NONE when read; else why not: no_python, no_interpreter, no_cupy (the
 * routine reasons), a CUDA context reason (no_device: the program has used no device memory),
 * gil_timeout, failed. */
enum roundtrim_skip roundtrim_python_cupy_cached(uint64_t *cached);

/* free_all_blocks() on the device pool and the pinned pool; *us is how long it took.
 * RT_SKIP_NONE when it ran, else why not (as above, and cuda_capture during a graph capture). */
enum roundtrim_skip roundtrim_python_cupy_free_blocks(uint64_t *us);

/* Whether a reading found that the program imported CuPy (a skipped release is then said). */
bool roundtrim_python_cupy_seen(void);

/* A CuPy reason worth recording: RT_SKIP_NONE for the routine ones (no Python, no CuPy, no device
 * use). */
enum roundtrim_skip roundtrim_python_cupy_news(enum roundtrim_skip why);

#endif
