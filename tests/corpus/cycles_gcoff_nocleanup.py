# truth: unsure
# env: ROUNDTRIM_GC_ROUNDS=0
# Automatic gc off and roundtrim's cleanup off: each round drops three reference cycles holding
# 1 MiB each, and nothing ever collects them. Live memory grows, and no collection ran that could
# tell garbage from kept references: the diagnosis must say it cannot tell, and what decides.
import gc
import time

from corpus_rounds import round_end


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(b"c" * (1 << 20))


gc.disable()
for r in range(24):
    for _ in range(3):
        Node()
    round_end()
    time.sleep(0.02)
