# truth: none
# Batches of random sizes (300 to 60,000 blocks of 256 B, and 1-16 MiB buffers), nothing kept.
import random, time
from corpus_rounds import round_end
random.seed(7)
for r in range(30):
    n = random.choice([1000, 20000, 5000, 60000, 300])
    batch = [bytearray(256) for _ in range(n)]
    arr = bytearray(random.choice([1, 4, 16, 2]) << 20)
    del batch, arr
    round_end(); time.sleep(0.02)
