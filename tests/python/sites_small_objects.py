"""A leak of small Python objects among churn: each round keeps 20,000 small dicts holding a
tuple, made at the line marked `# leak`, while other lines make and drop ten times as many
dicts and tuples. Objects of 512 bytes or less come from pymalloc's arenas, not from malloc.

A round ends with roundtrim_round_end() and waits for its sites record; one JSON line per round
with the bytes kept so far (sys.getsizeof of each object kept and of the list holding them).

Usage: sites_small_objects.py [ROUNDS]"""

import json
import sys

from round_wait import end_round

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
PER_ROUND = 20000
KEPT = []


def churn(r):
    total = 0
    for i in range(10 * PER_ROUND):
        d = {"step": i, "pair": (i, r)}
        total += len(d)
    return total


def leak(r):
    for i in range(PER_ROUND):
        KEPT.append({"round": r, "pair": (i, r + 0.5)})  # leak


def kept_bytes():
    size = sys.getsizeof(KEPT)
    for d in KEPT:
        size += sys.getsizeof(d) + sys.getsizeof(d["pair"]) + sys.getsizeof(d["pair"][1])
    return size


def main():
    for r in range(1, ROUNDS + 1):
        churn(r)
        if r > 1:
            leak(r)
        end_round(r, event="sites")
        print(json.dumps({"round": r, "kept_bytes": kept_bytes()}), flush=True)


if __name__ == "__main__":
    main()
