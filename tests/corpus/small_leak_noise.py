# truth: leak
# A small leak among churn: 0.1 MiB kept per round, while each round also makes and drops about
# 10 MiB of temporaries and keeps a scratch buffer of random size (0-256 KiB) until the next.
import random
import time

from corpus_rounds import round_end

random.seed(7)
kept = []
scratch = None
for r in range(32):
    temps = [bytearray(random.randint(1 << 10, 64 << 10)) for _ in range(300)]
    del temps
    scratch = bytearray(random.randint(0, 256 << 10))
    kept.append(bytearray(b"k" * (100 << 10)))
    round_end()
    time.sleep(0.02)
