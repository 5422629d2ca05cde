# truth: outside_heap
# Creates a 4 MiB POSIX shared-memory segment per round, writes it and keeps it mapped.
import os
import time
from multiprocessing import shared_memory

from corpus_rounds import round_end

segments = []
try:
    for r in range(24):
        seg = shared_memory.SharedMemory(create=True, size=4 << 20,
                                         name=f"rtcorpus_{os.getpid()}_{r}")
        seg.buf[:] = b"s" * (4 << 20)
        segments.append(seg)
        round_end()
        time.sleep(0.02)
finally:
    for seg in segments:
        seg.close()
        seg.unlink()
