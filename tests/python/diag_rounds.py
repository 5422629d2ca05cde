"""A Python program with one known cause of memory growth per mode, for the diagnosis:

    diag_rounds.py MODE [ROUNDS]

    leak        keeps a dict of 40,000 (int, str) entries per round: small objects in
                pymalloc's arenas, their table in the malloc heap
    garbage     makes 20,000 objects in reference cycles per round (8 MiB of payload) and
                drops them; automatic gc is off, so only a collection frees them
    flat        builds and drops the same dict each round
    garbage_rare  flat, but every fifth round (5, 10, ...) also makes and drops garbage's
                20,000 cycles: a collection frees megabytes in one round in five
    outside     keeps an 8 MiB anonymous mmap.mmap per round (the mmap module, not pymalloc)
    torch_leak  keeps a clone of a 1 MiB CPU tensor per round (keep.append(base.clone()))

Rounds end with roundtrim_round_end() through ctypes (a no-op without roundtrim).
"""

import ctypes
import gc
import mmap
import sys
import time

MODE = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 12

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(400)


keep = []
if MODE in ("garbage", "garbage_rare"):
    gc.disable()
if MODE == "torch_leak":
    import torch
    base = torch.ones(256 * 1024)  # 1 MiB of float32

for r in range(ROUNDS):
    if MODE == "leak":
        keep.append({i: (i, str(i)) for i in range(40000)})
    elif MODE == "garbage":
        for _ in range(20000):
            Node()
    elif MODE == "flat" or MODE == "garbage_rare":
        table = {i: (i, str(i)) for i in range(40000)}
        del table
        if MODE == "garbage_rare" and (r + 1) % 5 == 0:
            for _ in range(20000):
                Node()
    elif MODE == "outside":
        m = mmap.mmap(-1, 8 << 20)
        m.write(b"x" * (8 << 20))
        keep.append(m)
    elif MODE == "torch_leak":
        keep.append(base.clone())
    else:
        sys.exit(f"unknown mode {MODE}")
    round_end()
    time.sleep(0.03)
