# truth: leak
# A C buffer per round through ctypes, looked up in the global scope (ctypes.CDLL(None).malloc),
# never freed.
import ctypes
import time

from corpus_rounds import round_end

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []
for r in range(24):
    for _ in range(16):
        p = libc.malloc(64 * 1024)
        ctypes.memset(p, 7, 64 * 1024)
        kept.append(p)
    round_end()
    time.sleep(0.02)
