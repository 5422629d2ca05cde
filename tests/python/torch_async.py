"""PyTorch's cudaMallocAsync backend, stood in: its tensors come from the device's default
stream-ordered pool, memory_reserved() is that pool's reserve, and empty_cache() trims the pool
itself (as PyTorch does) before roundtrim's own pool trim comes. The program keeps an 8 MiB block
and frees a 32 MiB one, which the pool keeps reserved. Prints the pool's reserve before and after
the round's cleanup."""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402
from standin_cuda import check, primary_context, standin_torch  # noqa: E402

MiB = 1 << 20
RESERVED, USED = 0x5, 0x7  # CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, _USED_MEM_CURRENT

pool = ctypes.c_void_p()
dev, _ = primary_context(0)
check("cuDeviceGetDefaultMemPool", ctypes.byref(pool), dev)


def pool_attr(attr):
    v = ctypes.c_uint64()
    check("cuMemPoolGetAttribute", pool, attr, ctypes.byref(v))
    return v.value


standin_torch(is_initialized=lambda: True,
              get_allocator_backend=lambda: "cudaMallocAsync",
              memory_allocated=lambda: pool_attr(USED),
              memory_reserved=lambda: pool_attr(RESERVED),
              empty_cache=lambda: check("cuMemPoolTrimTo", pool, ctypes.c_size_t(0)))

kept, freed = ctypes.c_uint64(), ctypes.c_uint64()
check("cuMemAllocAsync", ctypes.byref(kept), ctypes.c_size_t(8 * MiB), None)
check("cuMemAllocAsync", ctypes.byref(freed), ctypes.c_size_t(32 * MiB), None)
check("cuMemFreeAsync", freed, None)
before = pool_attr(RESERVED)
end_round(1)
print(json.dumps({"reserved_before": before, "reserved_after": pool_attr(RESERVED)}), flush=True)
check("cuMemFreeAsync", kept, None)
