# truth: none
# expect: held=gc
# Automatic gc off; each round drops 20,000 small objects in reference cycles (about 3 MiB).
import gc
import time

from corpus_rounds import round_end


class Small:
    def __init__(self, i):
        self.me = self
        self.i = i
        self.name = f"n{i}"


gc.disable()
for r in range(24):
    for i in range(20000):
        Small(i)
    round_end()
    time.sleep(0.02)
