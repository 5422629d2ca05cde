/* Device-memory accounting (runtime/cuda/account.c): what the driver hooks in shim/ tell it, and
 * what the round boundary and roundtrim's own CUDA work (runtime/cuda/context.c, release.c,
 * round_fill.c) read back.
 *
 * Every call here is cheap, takes at most the accounting's own short lock, never calls into the
 * driver and never allocates through malloc (the block map grows with mmap), so the hooks may
 * call it from any application thread. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_ACCOUNT_H
#define ROUNDTRIM_RUNTIME_CUDA_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>

/* Flags of a tracked block. */
#define ROUNDTRIM_CUDA_HOST   1u /* pinned host memory: counted apart from device memory */
#define ROUNDTRIM_CUDA_HANDLE 2u /* keyed by a cuMemCreate handle, not by an address */

#define ROUNDTRIM_CUDA_MAX_DEVICES 64 /* device ordinals the accounting follows (bit masks) */

/* A live block as the accounting holds it. */
struct roundtrim_cuda_block {
    uint64_t key;  /* device (or pinned host) address, or cuMemCreate handle */
    uint64_t size; /* bytes */
    int32_t device;
    uint8_t flags;
};

/* ---- what the hooks tell ---- */

/* The driver answered a memory call of this process: from now on rounds carry CUDA keys. */
void roundtrim_cuda_mark_seen(void);

/* A successful allocation. device is -1 when unknown. */
void roundtrim_cuda_alloc_note(uint64_t key, uint64_t size, int device, unsigned flags);

/* Before a free is forwarded: takes the block out of the map (so that the driver cannot hand the
 * same address to another thread while it is still listed). False when the key is not tracked:
 * the free is then forwarded untouched and not counted. Only ROUNDTRIM_CUDA_HANDLE in flags
 * matters (it picks the key space). */
bool roundtrim_cuda_free_begin(uint64_t key, unsigned flags, struct roundtrim_cuda_block *out);

/* After the driver answered a free that free_begin found: released counts it, otherwise the block
 * goes back into the map unchanged. */
void roundtrim_cuda_free_end(const struct roundtrim_cuda_block *block, bool released);

/* The device of a successful allocation; -1 is ignored. The async form is for stream-ordered
 * memory from the device's default (or current) pool, which the cleanup then trims. */
void roundtrim_cuda_device_note(int device);
void roundtrim_cuda_async_device_note(int device);

/* cuMemRelease of a handle, in two halves around the driver call. A handle released while still
 * mapped keeps its memory until its last cuMemUnmap: it is counted as freed then. */
struct roundtrim_cuda_release {
    int state; /* private to the accounting */
    struct roundtrim_cuda_block block;
};
void roundtrim_cuda_release_begin(uint64_t handle, struct roundtrim_cuda_release *r);
void roundtrim_cuda_release_end(struct roundtrim_cuda_release *r, bool released);

/* A successful cuMemMap of a tracked handle at [va, va + size), and a successful cuMemUnmap of a
 * range (which may cover several mappings). */
void roundtrim_cuda_map_note(uint64_t va, uint64_t size, uint64_t handle);
void roundtrim_cuda_unmap_note(uint64_t va, uint64_t size);

/* Stream-ordered pools created by the process (cuMemPoolCreate). device is -1 for host pools. */
void roundtrim_cuda_pool_note(uintptr_t pool, int device, bool host);

/* What the accounting knows of a created pool; false for pools it did not see created. */
bool roundtrim_cuda_pool_lookup(uintptr_t pool, int *device, bool *host);

/* Before cuMemPoolDestroy is forwarded: forgets the pool and waits until no trim uses it.
 * Returns false when the pool was unknown. */
bool roundtrim_cuda_pool_forget(uintptr_t pool, int *device, bool *host);

/* A stream capture began (+1) or ended (-1): no synchronize and no trim while one is active. */
void roundtrim_cuda_capture_change(int delta);

/* ---- what the rest reads ---- */

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

/* Device bytes live now (no snapshot taken: the round's peak is left alone). */
uint64_t roundtrim_cuda_device_live(void);

/* Whether the driver answered a memory call (roundtrim_cuda_mark_seen). */
bool roundtrim_cuda_seen(void);

/* The devices the program allocated on, and those of them with stream-ordered allocations from
 * their default (or current) pool: a bit per device ordinal. */
uint64_t roundtrim_cuda_devices_used(void);
uint64_t roundtrim_cuda_devices_async(void);

/* Whether a stream capture is active anywhere in the process (counted by the driver hooks): no
 * device synchronize, pool trim or torch.cuda.empty_cache() may run then. */
bool roundtrim_cuda_capture_active(void);

/* The created pools, for the trim. Devices with created pools (bit per ordinal), and in *host
 * whether there are host pools. */
uint64_t roundtrim_cuda_pool_devices(bool *host);

/* The next created pool of device dev (-1: host pools) at index *at or after it that no destroy
 * is waiting on: false when there is none, else *at is its index and the pool is marked busy
 * (cuMemPoolDestroy waits) until roundtrim_cuda_pool_done(*at). */
bool roundtrim_cuda_pool_next(int *at, int dev, uintptr_t *pool);
void roundtrim_cuda_pool_done(int at);

/* Forgets the parent's state in a fork child. */
void roundtrim_cuda_fork_child(void);

#endif
