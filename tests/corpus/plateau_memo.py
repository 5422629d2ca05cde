# truth: none
# A memo table whose new keys grow rarer each round (the inputs repeat more and more), so
# memory rises less and less and then stops: a plateau, not a leak.
import random
import time

from corpus_rounds import round_end

random.seed(5)
memo = {}
for r in range(26):
    keys = min(3000, 300 * (r + 1))  # the inputs seen so far, at most 3000
    for _ in range(6000):
        k = random.randrange(keys)
        if k not in memo:
            memo[k] = [float(k)] * 64
    round_end()
    time.sleep(0.02)
