"""CPU-bound loop of small Python objects only (dicts, tuples, short lists and strings, all
under pymalloc's 512 bytes), made and dropped in a window of live objects, with a round ended
every ROUND_OBJECTS objects through roundtrim_round_end() (a no-op without roundtrim): a program
whose memory stays flat, for what roundtrim costs one that does nothing but make small objects.

Usage: small_objects_loop.py N [ROUND_OBJECTS]   (prints one JSON line)"""

import ctypes
import json
import sys

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    per_round = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
    window = [None] * 256
    rounds = 0
    for i in range(n):
        k = i & 3
        if k == 0:
            obj = {"step": i, "loss": i * 0.5}
        elif k == 1:
            obj = (i, i + 1, str(i))
        elif k == 2:
            obj = [i, i * 2, i * 3]
        else:
            obj = "item-%d" % i
        window[i & 255] = obj
        if (i + 1) % per_round == 0:
            round_end()
            rounds += 1
    print(json.dumps({"bench": "small_objects", "objects": n, "rounds": rounds}))


if __name__ == "__main__":
    main()
