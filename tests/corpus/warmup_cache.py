# truth: none
# expect: finding=plateau
# Warm-up: a cache of parsed records fills over the first five rounds (2 MiB a round), then
# every lookup hits and memory stays flat.
import time

from corpus_rounds import round_end

cache = {}
for r in range(24):
    for k in range(40):
        key = (r * 40 + k) % 200  # 200 distinct keys: all seen by round 5
        if key not in cache:
            cache[key] = bytearray(b"w" * (52 * 1024))
    scratch = [bytes(1000) for _ in range(2000)]
    del scratch
    round_end()
    time.sleep(0.02)
