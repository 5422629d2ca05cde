# truth: leak
# Keeps every round's log of 15,000 small tuples and strings: small Python objects in pymalloc's
# arenas, their list in the malloc heap.
import time

from corpus_rounds import round_end

log = []
for r in range(24):
    log.append([(r, i, f"event-{i}") for i in range(15000)])
    round_end()
    time.sleep(0.02)
