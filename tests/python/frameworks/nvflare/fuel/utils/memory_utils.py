"""NVFlare 2.7/2.8's own client cleanup: gc.collect(), then glibc's malloc_trim(0) through
ctypes on libc.so.6."""

import ctypes
import gc


def cleanup_memory(cuda_empty_cache=False):
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
