/* CUDA work on roundtrim's own threads (the worker, the Python helper) runs inside the primary
 * context of a device the program itself used, made current for the duration and only when the
 * program keeps it active: a thread with no current context would make the runtime create one
 * on device 0, and retaining an inactive primary context would create it. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_CONTEXT_H
#define ROUNDTRIM_RUNTIME_CUDA_CONTEXT_H

#include <stdbool.h>

#include "policy/skip_reason.h"
#include "runtime/cuda/types.h"

/* For CUDA work on a thread of roundtrim's own (torch.cuda.empty_cache() on the Python helper):
 * makes current the primary context of the lowest device the program used whose primary context
 * it keeps active, so that the runtime finds a current context instead of creating one on device
 * 0. Returns RT_SKIP_NONE when entered (call roundtrim_cuda_context_leave after the work), else
 * why not: no_device (no device memory seen), no_context (none active), no_driver_entry. */
struct roundtrim_cuda_scope {
    int device;
    void *saved; /* the context current before, made current again on leaving */
};
enum roundtrim_skip roundtrim_cuda_context_enter(struct roundtrim_cuda_scope *scope);
void roundtrim_cuda_context_leave(const struct roundtrim_cuda_scope *scope);

/* The same, one device at a time, for the worker's driver calls (runtime/cuda/release.c,
 * round_fill.c). */

/* Whether the driver has the calls to get and set the current context (false before it is
 * loaded): without them none of the below runs. */
bool roundtrim_cuda_context_calls(void);

/* The context current on this thread (NULL when none, or on an error). */
CUcontext roundtrim_cuda_current_context(void);

/* Makes device dev's primary context current on this thread, only when the program already made
 * it active. False when there is none to use; true means roundtrim_cuda_primary_leave must
 * follow, with the context current before. */
bool roundtrim_cuda_primary_enter(int dev);
void roundtrim_cuda_primary_leave(int dev, CUcontext saved);

#endif
