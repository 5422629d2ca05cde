# truth: leak
# needs: numpy
# A leak under a periodic load: the last batch's output (2, 8, 4 or 6 MiB, by turns) is alive at
# each round's end, and 1 MiB of every round's metrics is also kept for good.
import time

import numpy as np

from corpus_rounds import round_end

sizes = [2, 8, 4, 6]
kept = []
out = None
for r in range(28):
    out = np.full((sizes[r % 4] << 20) // 8, float(r))
    kept.append(np.full((1 << 20) // 8, float(r)))
    round_end()
    time.sleep(0.02)
