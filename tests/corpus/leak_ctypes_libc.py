# truth: leak
# A C buffer per round through ctypes, looked up on libc's own handle
# (ctypes.CDLL("libc.so.6").malloc reaches glibc directly, not a preloaded library), never
# freed: small blocks in glibc's heap.
import ctypes
import time

from corpus_rounds import round_end

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []
for r in range(24):
    for _ in range(512):
        p = libc.malloc(2048)
        ctypes.memset(p, 7, 2048)
        kept.append(p)
    round_end()
    time.sleep(0.02)
