"""CuPy's memory pools, stood in: its device pool takes blocks from the driver and keeps what the
program frees, free_all_blocks() gives them back; the pinned pool counts its releases. The
program keeps an 8 MiB array and frees a 32 MiB one into the pool, then ends two rounds. Prints
the pool's held bytes before and after each round's cleanup, and the pinned pool's releases."""

import ctypes
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402
from standin_cuda import check, primary_context  # noqa: E402

MiB = 1 << 20


class MemoryPool:
    def __init__(self):
        self.used, self.cached = {}, []

    def malloc(self, size):
        for i, (ptr, n) in enumerate(self.cached):
            if n == size:
                del self.cached[i]
                self.used[ptr] = n
                return ptr
        block = ctypes.c_uint64()
        check("cuMemAlloc_v2", ctypes.byref(block), ctypes.c_size_t(size))
        self.used[block.value] = size
        return block.value

    def free(self, ptr):
        self.cached.append((ptr, self.used.pop(ptr)))

    def used_bytes(self):
        return sum(self.used.values())

    def free_bytes(self):
        return sum(n for _, n in self.cached)

    def total_bytes(self):
        return self.used_bytes() + self.free_bytes()

    def free_all_blocks(self, stream=None):
        for ptr, _ in self.cached:
            check("cuMemFree_v2", ctypes.c_uint64(ptr))
        self.cached = []


class PinnedMemoryPool:
    releases = 0

    def free_all_blocks(self):
        PinnedMemoryPool.releases += 1


pool, pinned = MemoryPool(), PinnedMemoryPool()
cupy = types.ModuleType("cupy")
cupy.get_default_memory_pool = lambda: pool
cupy.get_default_pinned_memory_pool = lambda: pinned
sys.modules["cupy"] = cupy

primary_context(0)
kept = pool.malloc(8 * MiB)
pool.free(pool.malloc(32 * MiB))
out = []
for n in (1, 2):
    before = pool.total_bytes()
    end_round(n)
    out.append({"round": n, "held_before": before, "held_after": pool.total_bytes()})
    pool.free(pool.malloc(16 * MiB))  # the next round's temporaries, cached again
print(json.dumps({"rounds": out, "pinned_releases": PinnedMemoryPool.releases}), flush=True)
pool.free(kept)
