# truth: leak
# needs: numpy
# Keeps a copy of each round's 2 MiB numpy update.
import time

import numpy as np

from corpus_rounds import round_end

updates = []
w = np.zeros(256 * 1024)
for r in range(24):
    update = np.random.default_rng(r).standard_normal(w.shape)
    w += 0.01 * update
    updates.append(update.copy())
    round_end()
    time.sleep(0.02)
