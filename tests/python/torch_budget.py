"""A process whose full gc is expensive (two million live objects to walk) and whose short
rounds each leave a 48 MiB block in a stand-in PyTorch cache, with cycles to collect every round.
The gc soon costs more than the cleanup budget allows; the cache release, cheap, must not wait for
it. With "stream_ordered", it also used the driver's pool, so that each release ends with
roundtrim's pool trim and its synchronize (which waits on queued GPU work, spending no CPU).
Prints how many times the cache was released."""

import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402
from standin_cuda import check, primary_context, standin_torch  # noqa: E402

MiB = 1 << 20
ROUNDS = 8
primary_context(0)
if len(sys.argv) > 1 and sys.argv[1] == "stream_ordered":  # a pool for roundtrim's trim
    block = ctypes.c_uint64()
    check("cuMemAllocAsync", ctypes.byref(block), ctypes.c_size_t(2 * MiB), None)
    check("cuMemFreeAsync", block, None)

cache = {"block": None, "released": 0}


def empty_cache():
    if cache["block"] is not None:
        check("cuMemFree_v2", ctypes.c_uint64(cache["block"]))
        cache["block"] = None
        cache["released"] += 1


standin_torch(is_initialized=lambda: True, memory_allocated=lambda: 0,
              memory_reserved=lambda: 48 * MiB if cache["block"] is not None else 0,
              empty_cache=empty_cache)

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
