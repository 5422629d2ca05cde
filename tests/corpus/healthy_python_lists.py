# truth: none
# Builds a list of 300,000 floats and a dict of 50,000 strings every round and drops them. The
# freed heap measured before cleanup steps up once (glibc's top chunk moves up at one round and
# stays): a new level, not growth.
import time
from corpus_rounds import round_end
for r in range(24):
    xs = [float(i) for i in range(300000)]
    s = sum(xs)
    d = {i: str(i) for i in range(50000)}
    del xs, d
    round_end(); time.sleep(0.02)
