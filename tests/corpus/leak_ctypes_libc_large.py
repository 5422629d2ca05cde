# truth: leak
# A C buffer per round through ctypes, looked up on libc's own handle
# (ctypes.CDLL("libc.so.6").malloc reaches glibc directly, not a preloaded library), never
# freed: blocks of 256 KiB, each a mapping of its own (above glibc's mmap threshold).
import ctypes
import time

from corpus_rounds import round_end

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []
for r in range(24):
    for _ in range(4):
        p = libc.malloc(256 << 10)
        ctypes.memset(p, 7, 256 << 10)
        kept.append(p)
    round_end()
    time.sleep(0.02)
