# truth: leak
# Healthy for 12 rounds; from round 13 on, each round's 1 MiB result is also appended to a list
# that is never emptied.
import time

from corpus_rounds import round_end

results = []
for r in range(1, 27):
    result = bytearray(b"r" * (1 << 20))
    if r > 12:
        results.append(result)
    del result
    round_end()
    time.sleep(0.02)
