"""A cache of small Python objects filled in rounds 2 to 4 and emptied in round 5, while a tool
(tests/programs/libobject_allocator_tool.c) saved the object allocator before round 1, before
roundtrim wrapped it, and puts its own allocator in place at round 4, calling the saved one: from
then on the interpreter's calls go past roundtrim's first wrapper. Nothing is kept at the end.

One JSON line per round: the round, the objects in the cache and the calls the tool served.

Usage: sites_objects_replaced.py TOOL.so [ROUNDS]"""

import ctypes
import json
import sys

from round_wait import end_round

TOOL = ctypes.PyDLL(sys.argv[1])
TOOL.tool_calls.restype = ctypes.c_ulong
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
PER_ROUND = 20000
CACHE = []


def fill(r):
    for i in range(PER_ROUND):
        CACHE.append({"round": r, "pair": (i, r + 0.5)})  # cached


def main():
    assert TOOL.tool_save() == 0
    for r in range(1, ROUNDS + 1):
        if r == 4:
            assert TOOL.tool_install() == 0
        if 2 <= r <= 4:
            fill(r)
        if r == 5:
            CACHE.clear()
        end_round(r, event="sites")
        print(json.dumps({"round": r, "cached": len(CACHE), "tool_calls": TOOL.tool_calls()}),
              flush=True)


if __name__ == "__main__":
    main()
