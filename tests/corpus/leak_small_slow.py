# truth: leak
# A slow leak of small objects: each round appends 2,000 small (round, i) tuples to a history
# that is never trimmed (about 0.2 MiB a round, in pymalloc's arenas and the list's table).
import time

from corpus_rounds import round_end

history = []
for r in range(32):
    history.extend((r, i, float(i)) for i in range(2000))
    scratch = [str(i) * 3 for i in range(20000)]
    del scratch
    round_end()
    time.sleep(0.02)
