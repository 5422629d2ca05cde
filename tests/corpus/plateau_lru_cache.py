# truth: none
# An lru_cache of 4,000 1 KiB strings, filled in its first two rounds, then flat at its cap.
import functools, time
from corpus_rounds import round_end
@functools.lru_cache(maxsize=4000)
def item(k):
    return "x" * 1000 + str(k)
for r in range(26):
    for i in range(2000):
        item(r * 2000 + i)
    round_end(); time.sleep(0.02)
