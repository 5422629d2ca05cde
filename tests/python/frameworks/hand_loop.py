"""A hand-written round loop that sometimes cleans up by itself: malloc_trim(0) through ctypes
(both ways programs reach it), gc.collect(), or both."""

import ctypes
import gc


class _Cycle:
    def __init__(self):
        self.me = self
        self.payload = bytearray(32 * 1024)


def run_round(i, cleanup):
    for _ in range(64):
        _Cycle()
    if "trim" in cleanup:
        ctypes.CDLL(None).malloc_trim(0)
    if "libc_trim" in cleanup:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    if "gc" in cleanup:
        gc.collect()
    return i
