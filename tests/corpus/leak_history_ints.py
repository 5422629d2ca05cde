# truth: leak
# A history list extended by 40,000 ints a round (small objects, the list's array grown by
# realloc) among 30,000 temporary strings.
import time
from corpus_rounds import round_end
hist = []
for r in range(30):
    hist.extend(range(r * 40000, r * 40000 + 40000))
    tmp = [str(i) for i in range(30000)]
    del tmp
    round_end(); time.sleep(0.02)
