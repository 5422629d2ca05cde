"""A process whose full gc is expensive (two million live objects to walk) and whose short
rounds each leave a 48 MiB block in a stand-in PyTorch cache, with cycles to collect every round.
The gc soon costs more than the cleanup budget allows; the cache release, cheap, must not wait for
it. Prints how many times the cache was released."""

import ctypes
import json
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402

MiB = 1 << 20
ROUNDS = 8
cu = ctypes.CDLL("libcuda.so.1")


def check(name, *args):
    rc = getattr(cu, name)(*args)
    if rc != 0:
        raise SystemExit(f"{name}: {rc}")


dev, ctx = ctypes.c_int(), ctypes.c_void_p()
check("cuInit", 0)
check("cuDeviceGet", ctypes.byref(dev), 0)
check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
check("cuCtxSetCurrent", ctx)

cache = {"block": None, "released": 0}


def empty_cache():
    if cache["block"] is not None:
        check("cuMemFree_v2", ctypes.c_uint64(cache["block"]))
        cache["block"] = None
        cache["released"] += 1


cuda = types.ModuleType("torch.cuda")
cuda.is_initialized = lambda: True
cuda.memory_allocated = lambda: 0
cuda.memory_reserved = lambda: 48 * MiB if cache["block"] is not None else 0
cuda.empty_cache = empty_cache
torch = types.ModuleType("torch")
torch.cuda = cuda
sys.modules["torch"] = torch
sys.modules["torch.cuda"] = cuda

live = [[i] for i in range(2_000_000)]  # what every full collection walks
for n in range(1, ROUNDS + 1):
    for _ in range(1000):  # cycles: each collection finds garbage
        a = {}
        a["self"] = a
    del a
    if cache["block"] is None:  # the round's work leaves a block in the cache
        block = ctypes.c_uint64()
        check("cuMemAlloc_v2", ctypes.byref(block), ctypes.c_size_t(48 * MiB))
        cache["block"] = block.value
    time.sleep(0.02)
    end_round(n)
print(json.dumps({"released": cache["released"]}), flush=True)
