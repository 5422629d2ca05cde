# truth: none
# needs: numpy
# A numpy training loop: each round makes batches of random sizes, computes on them and drops
# them; nothing is kept from one round to the next.
import time

import numpy as np

from corpus_rounds import round_end

rng = np.random.default_rng(1)
weights = rng.standard_normal((256, 16))
for r in range(24):
    for _ in range(8):
        batch = rng.standard_normal((int(rng.integers(512, 4096)), 256))  # 1-8 MiB
        err = batch @ weights - 1.0
        grad = batch.T @ err / len(batch)
        weights -= 1e-3 * grad
        del batch, err, grad
    round_end()
    time.sleep(0.02)
