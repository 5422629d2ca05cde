# truth: leak
# Keeps a copy of each round's 2 MiB numpy update.
import ctypes
import time

import numpy as np

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass

updates = []
w = np.zeros(256 * 1024)
for r in range(24):
    update = np.random.default_rng(r).standard_normal(w.shape)
    w += 0.01 * update
    updates.append(update.copy())
    round_end()
    time.sleep(0.02)
