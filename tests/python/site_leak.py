"""Planted leak for the allocation-site detection benchmark, in Python: every round, churn
through about --churn-mib MiB of bytes/bytearray objects of varied sizes, replace a steady
--model-mib MiB "model", and keep one round's 1 MiB of result buffers in a list that is never
emptied (keep_round_results). A profiler names the planted site when it points at
keep_round_results (site_leak.py).

Usage: site_leak.py [--rounds N] [--churn-mib M] [--model-mib M]
A round ends with roundtrim_round_end() when roundtrim is preloaded, then one JSON line."""

import argparse
import ctypes
import json
import random
import sys

KEPT = []


def churn_round(budget, rng):
    done = 0
    while done < budget:
        batch = []
        for _ in range(64):
            n = rng.randrange(600, 65536)
            batch.append(bytearray(n) if n & 1 else bytes(n))
            done += n
        del batch
    return done


def load_model(mib):
    return bytearray(mib * 1024 * 1024)


def keep_round_results():
    KEPT.append([bytearray(64 * 1024) for _ in range(16)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--churn-mib", type=int, default=100)
    ap.add_argument("--model-mib", type=int, default=8)
    args = ap.parse_args()
    try:
        round_end = ctypes.CDLL(None).roundtrim_round_end
    except AttributeError:
        round_end = None
    rng = random.Random(1)
    model = None
    for r in range(1, args.rounds + 1):
        model = None
        model = load_model(args.model_mib)
        churn_round(args.churn_mib * 1024 * 1024, rng)
        keep_round_results()
        if round_end is not None:
            round_end()
        print(json.dumps({"round": r, "kept_mib": len(KEPT), "model": len(model)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
