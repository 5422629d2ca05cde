# truth: leak
# Keeps 1 MiB of bytes per round in a history list.
import time

from corpus_rounds import round_end

history = []
for r in range(24):
    history.append(b"h" * (1 << 20))
    tmp = [bytes(5000) for _ in range(400)]
    del tmp
    round_end()
    time.sleep(0.02)
