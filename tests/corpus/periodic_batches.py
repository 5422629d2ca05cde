# truth: none
# needs: numpy
# Batch sizes cycle through 1, 6, 2 and 9 MiB; the last batch's output stays alive across the
# round's end until the next one replaces it.
import time

import numpy as np

from corpus_rounds import round_end

sizes = [1, 6, 2, 9]
out = None
for r in range(26):
    mib = sizes[r % len(sizes)]
    x = np.ones((mib << 20) // 8)
    out = x * 2.0
    del x
    round_end()
    time.sleep(0.02)
