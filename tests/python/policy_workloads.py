"""Python programs for the cleanup benchmark: where a cleanup every round pays for nothing.

    policy_workloads.py MODE [--rounds N] [--objects K] [--wait S] [--probe-ms Q]

    leak             keeps a graph of K tracked objects (lists, 400,000 by default: a full gc
                     walks them all) and leaks 20,000 strings per round (untracked: no work
                     for the gc); it makes no reference cycles, and automatic gc stays on
    self_collecting  the same graph, a round's work of temporary objects and buffers, and a
                     gc.collect() of its own at the end of each round, as APPFL's clients do;
                     nothing leaks
    few_cycles       the same graph, and 20 small reference cycles made at the end of each round
                     (the interpreter's own collections have not seen them when the round ends):
                     beside 20 small lists that stay: a full gc finds the cycles, walks the
                     whole graph, and frees a few KiB

Each round works for a while (--records temporary dicts and lists, a joined bytes, 64 buffers of
64-124 KiB), ends with
roundtrim_round_end() through ctypes (a no-op without roundtrim), waits S seconds (the server's
turn) and prints {"round", "rss", "wait_max_us"}: the RSS after the wait, and with --probe-ms
the longest lateness of a heartbeat thread from the round's end to the end of the wait, where
roundtrim's cleanup runs (a gc holds the GIL, a trim the heap).
"""

import argparse
import ctypes
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from heartbeat import Heartbeat  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def work(records_per_round):
    """A round's temporaries: parsed records, a serialized model, a few large buffers."""
    records = [{"id": i, "values": [i, i + 1, i + 2], "name": str(i)}
               for i in range(records_per_round)]
    model = b"".join(str(r["id"]).encode() for r in records)
    buffers = [bytearray(64 * 1024 + 4096 * (i % 16)) for i in range(64)]
    total = sum(len(b) for b in buffers) + len(model)
    del records, model, buffers
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["leak", "self_collecting", "few_cycles"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--objects", type=int, default=400000)
    ap.add_argument("--wait", type=float, default=0.2)
    ap.add_argument("--probe-ms", type=float, default=0)
    ap.add_argument("--records", type=int, default=20000,
                    help="temporary records a round (each a dict and a list)")
    args = ap.parse_args()

    graph = [[i] for i in range(args.objects)]  # long-lived, tracked, no cycles
    leaked = []
    beat = Heartbeat(args.probe_ms) if args.probe_ms > 0 else None
    if beat:
        beat.start()
    for rnd in range(1, args.rounds + 1):
        work(args.records)
        if args.mode == "leak":
            leaked.append([f"{rnd}:{i}" for i in range(20000)])
        elif args.mode == "few_cycles":
            for i in range(20):  # each beside a small object that stays: no arena empties
                d = {}
                d["self"] = d
                graph.append([i])
            del d
        else:
            gc.collect()
        if beat:
            beat.take()  # the round's own work is not the cleanup's
        round_end()
        time.sleep(args.wait)
        line = {"round": rnd, "rss": rss_bytes()}
        if beat:
            line["wait_max_us"] = beat.take()
        print(json.dumps(line), flush=True)
    if beat:
        beat.stop()
    del graph


if __name__ == "__main__":
    main()
