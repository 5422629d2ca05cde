# truth: none
# expect: finding=swings
# A result cache grows 3 MiB a round and is cleared every fifth round: a sawtooth, flat.
import time

from corpus_rounds import round_end

cache = []
for r in range(26):
    if r % 5 == 0:
        cache.clear()
    cache.append(bytearray(b"s" * (3 << 20)))
    round_end()
    time.sleep(0.02)
