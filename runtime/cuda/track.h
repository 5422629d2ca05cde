/* Device-memory accounting fed by the driver hooks in shim/, and the release of cached pools. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_TRACK_H
#define ROUNDTRIM_RUNTIME_CUDA_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/round_record.h"

/* Cumulative counters of one class of memory (device, or pinned host), and the highest live
 * bytes since the previous snapshot. */
struct roundtrim_cuda_class_counts {
    uint64_t alloc_calls, alloc_bytes, free_calls, free_bytes, live_bytes, peak_bytes;
};

struct roundtrim_cuda_counts {
    bool seen; /* the driver answered a memory call; the rest is zero otherwise */
    struct roundtrim_cuda_class_counts device, host;
};

/* Takes the counters at this instant, with plain loads and no lock: async-signal-safe. The peak
 * starts again from the live bytes. */
void roundtrim_cuda_counts_snapshot(struct roundtrim_cuda_counts *out);

/* A round's device and pinned-host figures, from the snapshots at its two ends, plus, with
 * ask_driver, the driver's free and total memory read now. Returns false, leaving out->present
 * false, when the driver had not been seen at the round's end. */
bool roundtrim_cuda_round_fill(struct roundtrim_cuda_round *out,
                               const struct roundtrim_cuda_counts *now,
                               const struct roundtrim_cuda_counts *before, bool ask_driver);

/* Trims to zero every stream-ordered pool the process used, each device's inside its primary
 * context: the default pools of devices that allocated stream-ordered memory, and the created
 * pools. Returns false when nothing was trimmed; roundtrim_cuda_pool_trim_skipped() then says
 * why when that is news ("cuda_capture", "no_context"), NULL when there was nothing to trim. */
bool roundtrim_cuda_pool_trim(uint64_t *released_bytes);
const char *roundtrim_cuda_pool_trim_skipped(void);

/* For CUDA work on a thread of roundtrim's own (torch.cuda.empty_cache() on the Python helper):
 * makes current the primary context of the lowest device the program used whose primary context
 * it keeps active, so that the runtime finds a current context instead of creating one on device
 * 0. Returns NULL when entered (call roundtrim_cuda_context_leave after the work), else why not:
 * "cuda_no_device" (no device memory seen), "cuda_no_context" (none active),
 * "cuda_no_driver_entry". */
struct roundtrim_cuda_scope {
    int device;
    void *saved; /* the context current before, made current again on leaving */
};
const char *roundtrim_cuda_context_enter(struct roundtrim_cuda_scope *scope);
void roundtrim_cuda_context_leave(const struct roundtrim_cuda_scope *scope);

/* Whether a stream capture is active anywhere in the process (counted by the driver hooks): no
 * device synchronize, pool trim or torch.cuda.empty_cache() may run then. */
bool roundtrim_cuda_capture_active(void);

/* Forgets the parent's state in a fork child. */
void roundtrim_cuda_fork_child(void);

#endif
