#!/usr/bin/python3
"""What allocation sampling costs a program at each ROUNDTRIM_SITES setting: the program runs
REPS times per variant, the variants interleaved (the order reversed every other pass); prints
the median wall and CPU time (user + system of the process and its threads, roundtrim's worker
included) of each, CPU against the first variant, and how many sites records each run wrote
(0: sampling never started). Not part of `make bench`; docs/performance.md cites its runs.

    bench/sites_default_cost.py REPS VARIANTS -- PROGRAM [ARGS...]

VARIANTS: comma-separated, each `bare` (no preload), `false`, `true` (ROUNDTRIM_SITES set so)
or `auto` (ROUNDTRIM_SITES unset). SITES_COST_ENV: a JSON object of more variables for the
preloaded runs (a round hook: {"ROUNDTRIM_PY_HOOK": "fl_task:train_round"})."""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")), "libroundtrim.so")


def run_once(argv, variant, extra, log):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    if variant != "bare":
        env.update(extra)
        env["LD_PRELOAD"] = LIB
        env["ROUNDTRIM_LOG"] = log
        if variant != "auto":
            env["ROUNDTRIM_SITES"] = variant
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    sites = 0
    if variant != "bare":
        with open(log) as f:
            sites = sum('"event":"sites"' in line for line in f)
        os.unlink(log)
    return wall, cpu, sites


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    reps, variants, argv = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[4:]
    extra = json.loads(os.environ.get("SITES_COST_ENV", "{}"))
    results = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "rt.jsonl")
        for i in range(reps):
            for v in variants if i % 2 == 0 else variants[::-1]:
                results[v].append(run_once(argv, v, extra, log))
    base = statistics.median(cpu for _, cpu, _ in results[variants[0]])
    for v in variants:
        wall = statistics.median(r[0] for r in results[v])
        cpu = statistics.median(r[1] for r in results[v])
        print(f"{v:6s} wall {wall:.3f} s  cpu {cpu:.3f} s ({(cpu / base - 1) * 100:+.1f}% "
              f"cpu vs {variants[0]})  sites records {[r[2] for r in results[v]]}")


if __name__ == "__main__":
    main()
