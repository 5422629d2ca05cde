# truth: none
# A pure-Python loop: each round builds dicts, lists and strings of records, aggregates them
# and drops them all.
import random
import time

from corpus_rounds import round_end

random.seed(2)
total = 0
for r in range(24):
    records = [{"id": i, "name": f"user{i}", "score": random.random(), "tags": [i % 7, i % 11]}
               for i in range(random.randint(20000, 40000))]
    by_tag = {}
    for rec in records:
        by_tag.setdefault(rec["tags"][0], []).append(rec["score"])
    total += sum(len(v) for v in by_tag.values())
    del records, by_tag
    round_end()
    time.sleep(0.02)
