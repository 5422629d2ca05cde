"""A Python program whose threads fragment glibc's heap: each round, T threads each build B
buffers of 600-4,000 bytes (bytearrays: above pymalloc's 512 bytes, so malloc's), keep every
K-th into the next round and drop the rest. The round ends with roundtrim_round_end() through
ctypes (a no-op without roundtrim), the program waits S seconds, then prints {"round", "rss"}.

    frag_threads.py [--rounds N] [--threads T] [--blocks B] [--keep-every K] [--wait S]
"""

import argparse
import ctypes
import json
import os
import random
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def work(kept, index, blocks, keep_every, seed):
    rng = random.Random(seed)
    made = [bytearray(rng.randint(600, 4000)) for _ in range(blocks)]
    kept[index] = made[::keep_every]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=20000)
    ap.add_argument("--keep-every", type=int, default=5)
    ap.add_argument("--wait", type=float, default=1.0)
    a = ap.parse_args()
    kept = [None] * a.threads
    for r in range(1, a.rounds + 1):
        threads = [threading.Thread(target=work, args=(kept, i, a.blocks, a.keep_every, r * 97 + i))
                   for i in range(a.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        round_end()
        time.sleep(a.wait)
        print(json.dumps({"round": r, "rss": rss()}), flush=True)


if __name__ == "__main__":
    main()
