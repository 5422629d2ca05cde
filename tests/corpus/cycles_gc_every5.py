# truth: none
# expect: held=gc
# env: ROUNDTRIM_GC_ROUNDS=5
# Automatic gc off; each round drops four reference cycles holding 1 MiB each, and roundtrim's
# cleanup runs every fifth round: memory rises for five rounds and falls back at each cleanup,
# a sawtooth held flat by the gc.
import gc
import time

from corpus_rounds import round_end


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(b"c" * (1 << 20))


gc.disable()
for r in range(30):
    for _ in range(4):
        Node()
    round_end()
    time.sleep(0.02)
