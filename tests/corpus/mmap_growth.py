# truth: outside_heap
# Maps and keeps 4 MiB of anonymous memory per round (mmap.mmap, not the allocator).
import mmap
import time

from corpus_rounds import round_end

maps = []
for r in range(24):
    m = mmap.mmap(-1, 4 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.write(b"m" * (4 << 20))
    maps.append(m)
    round_end()
    time.sleep(0.02)
