"""PyTorch's cudaMallocAsync backend, stood in: its tensors come from the device's default
stream-ordered pool, memory_reserved() is that pool's reserve, and empty_cache() trims the pool
itself (as PyTorch does) before roundtrim's own pool trim comes. The program keeps an 8 MiB block
and frees a 32 MiB one, which the pool keeps reserved. Prints the pool's reserve before and after
the round's cleanup."""

import ctypes
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402

MiB = 1 << 20
RESERVED, USED = 0x5, 0x7  # CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, _USED_MEM_CURRENT

cu = ctypes.CDLL("libcuda.so.1")


def check(name, *args):
    rc = getattr(cu, name)(*args)
    if rc != 0:
        raise SystemExit(f"{name}: {rc}")


dev, ctx, pool = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
check("cuInit", 0)
check("cuDeviceGet", ctypes.byref(dev), 0)
check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
check("cuCtxSetCurrent", ctx)
check("cuDeviceGetDefaultMemPool", ctypes.byref(pool), dev)


def pool_attr(attr):
    v = ctypes.c_uint64()
    check("cuMemPoolGetAttribute", pool, attr, ctypes.byref(v))
    return v.value


cuda = types.ModuleType("torch.cuda")
cuda.is_initialized = lambda: True
cuda.get_allocator_backend = lambda: "cudaMallocAsync"
cuda.memory_allocated = lambda: pool_attr(USED)
cuda.memory_reserved = lambda: pool_attr(RESERVED)
cuda.empty_cache = lambda: check("cuMemPoolTrimTo", pool, ctypes.c_size_t(0))
torch = types.ModuleType("torch")
torch.cuda = cuda
sys.modules["torch"] = torch
sys.modules["torch.cuda"] = cuda

kept, freed = ctypes.c_uint64(), ctypes.c_uint64()
check("cuMemAllocAsync", ctypes.byref(kept), ctypes.c_size_t(8 * MiB), None)
check("cuMemAllocAsync", ctypes.byref(freed), ctypes.c_size_t(32 * MiB), None)
check("cuMemFreeAsync", freed, None)
before = pool_attr(RESERVED)
end_round(1)
print(json.dumps({"reserved_before": before, "reserved_after": pool_attr(RESERVED)}), flush=True)
check("cuMemFreeAsync", kept, None)
