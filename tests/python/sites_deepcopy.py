"""A leak made through library code deeper than a site's eight Python frames: every round the
program keeps a copy.deepcopy of a nested "model" (dicts six levels deep, 2 KiB bytearrays at
the leaves, so malloc's), at the line marked `# leak`; the blocks are allocated inside
copy.deepcopy's recursion (deepcopy, _deepcopy_dict, _reconstruct, ... a dozen frames of the
standard library below the program's line).

A round ends with roundtrim_round_end() and waits for its sites record; one JSON line per round
with the bytes kept so far.

Usage: sites_deepcopy.py [ROUNDS]"""

import copy
import json
import sys

from round_wait import end_round

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
DEPTH, FANOUT, LEAF = 6, 3, 2048
HISTORY = []


def nested(depth):
    if depth == 0:
        return bytearray(LEAF)
    return {"layer%d" % i: nested(depth - 1) for i in range(FANOUT)}


def keep_snapshot(model):
    HISTORY.append(copy.deepcopy(model))  # leak


def run_round(model):
    keep_snapshot(model)


def main():
    model = nested(DEPTH)
    leaves = FANOUT ** DEPTH
    for r in range(1, ROUNDS + 1):
        run_round(model)
        print(json.dumps({"round": r, "kept": r * leaves * LEAF}), flush=True)
        end_round(r, event="sites")


main()
