"""A client that starts a pool of threads every round and keeps them: each thread allocates
about 4 MiB in 1,000-byte blocks (above pymalloc's 512 bytes, so malloc's), keeps one 64 KiB
block at the line marked `# kept`, frees the rest and waits, alive, until the program ends
(with `exit`: ends once it has allocated, short-lived).

Each round ends with roundtrim_round_end() (waiting for its record when roundtrim is loaded);
one JSON line per round: {"round", "rss" (bytes, after the round's threads allocated),
"threads" (alive now)}.

Usage: sites_threads.py [ROUNDS] [THREADS_A_ROUND] [keep|exit]"""

import json
import os
import sys
import threading

from round_wait import end_round

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
PER_ROUND = int(sys.argv[2]) if len(sys.argv) > 2 else 50
SHORT_LIVED = len(sys.argv) > 3 and sys.argv[3] == "exit"
PAGE = os.sysconf("SC_PAGE_SIZE")
KEPT = []
done = threading.Event()


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def work(ready):
    churn = [bytearray(1000) for _ in range(4000)]
    del churn
    KEPT.append(bytearray(65536))  # kept
    ready.release()
    if not SHORT_LIVED:
        done.wait()


def main():
    threads = []
    for r in range(1, ROUNDS + 1):
        ready = threading.Semaphore(0)
        for _ in range(PER_ROUND):
            t = threading.Thread(target=work, args=(ready,))
            t.start()
            threads.append(t)
        for _ in range(PER_ROUND):
            ready.acquire()
        if SHORT_LIVED:
            for t in threads[-PER_ROUND:]:
                t.join()
        print(json.dumps({"round": r, "rss": rss(), "threads": threading.active_count()}),
              flush=True)
        if "ROUNDTRIM_LOG" in os.environ:
            end_round(r)
    done.set()
    for t in threads:
        t.join()


main()
