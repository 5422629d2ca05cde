# truth: none
# expect: held=gc
# Automatic gc off; each round drops six reference cycles that hold 1 MiB each. Only a
# collection frees them: roundtrim's cleanup gc holds the program flat.
import gc
import time

from corpus_rounds import round_end


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(b"c" * (1 << 20))


gc.disable()
for r in range(24):
    for _ in range(6):
        Node()
    round_end()
    time.sleep(0.02)
