#!/usr/bin/python3
"""Section 11 of `make bench`: roundtrim's trim against the program's own, quiet and loaded.

  fragmenting  tests/programs/fl_workload: 4 threads, each round 472 MiB in 64-4,064-byte
               blocks, one in 16 kept into the next round, then 1 s idle (the server's turn)
  python       tests/python/frag_threads.py: 4 Python threads, 20,000 bytearrays of 600-4,000
               bytes each a round, every 5th kept, then 1 s idle
  hold         tests/bench/bench_cleanup --mode round: a 1 GiB heap in 4 threads that keep
               probing malloc and free while the cleanup runs (their longest blocked call)

Variants: bare (no roundtrim), hand (the program calls malloc_trim(0) itself after each round),
roundtrim (the defaults; rounds marked by a signal or roundtrim_round_end), fixed
(ROUNDTRIM_ADAPTIVE=false: the worker calls malloc_trim(0) every round). Each runs quiet and
loaded (two CPU-bound processes beside it, on this 2-core machine), interleaved, `reps` times.
The machine's own trim rate comes from the hand trims of the 1 GiB heap: their wall time per
MiB they gave back. Imported by bench/bench.py, which passes itself as `bench`; also runs alone:
`bench/bench_trim.py [--reps N] [--rounds N]` prints the section's markdown."""

import os
import statistics
import subprocess

FRAG = ["fl_workload", "--threads", "4", "--model-mib", "472", "--min-bytes", "64",
        "--max-bytes", "4064", "--keep-every", "16", "--pause-ms", "1000", "--probe-ms", "1"]
PYFRAG = ["frag_threads.py", "--wait", "1.0"]
HOLD = ["bench_cleanup", "--mode", "round", "--heap-mib", "1024", "--threads", "4"]
CONDITIONS = ["quiet", "loaded"]
LIMIT_MS = 100  # ROUNDTRIM_TRIM_PAUSE_MS's default


class Hogs:
    """Two CPU-bound processes beside the measured one, for the loaded condition."""

    def __init__(self, bench, on):
        self.procs = []
        if on:
            for _ in range(2):
                self.procs.append(subprocess.Popen([bench.PY, "-c", "while True: pass"]))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def frag_run(bench, variant, rounds, tmpdir, tag):
    argv = [bench.prog(FRAG[0])] + FRAG[1:] + ["--rounds", str(rounds)]
    log = os.path.join(tmpdir, f"trim.{tag}.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    env = {}
    if variant == "bare":
        argv += ["--mode", "plain"]
    elif variant == "hand":
        argv += ["--mode", "trim"]
    else:
        argv += ["--mode", "signal"]
        env = {"LD_PRELOAD": bench.LIB, "ROUNDTRIM_LOG": log}
        if variant == "fixed":
            env["ROUNDTRIM_ADAPTIVE"] = "false"
    return bench.json_lines(bench.run("trim", argv, env, timeout=900).stdout), log


def python_run(bench, variant, rounds, tmpdir, tag):
    argv = [bench.PY, os.path.join(bench.ROOT, "tests", "python", PYFRAG[0])] + PYFRAG[1:]
    argv += ["--rounds", str(rounds)]
    log = os.path.join(tmpdir, f"trim.{tag}.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    env = {} if variant == "bare" else {"LD_PRELOAD": bench.LIB, "ROUNDTRIM_LOG": log}
    return bench.json_lines(bench.run("trim", argv, env, timeout=900).stdout), log


def summarize(lines, log, bench):
    """End-of-round RSS (median from round 3), the program's own trim, roundtrim's records."""
    rss = statistics.median(r["rss"] for r in lines[2:])
    out = {"rss": rss}
    hand = [r for r in lines if r.get("cleanup_us")]
    if hand:
        out["hand_us"] = statistics.mean(r["cleanup_us"] for r in hand)
        out["hand_cpu_us"] = statistics.mean(r["cleanup_cpu_us"] for r in hand)
    recs = [r for r in bench.read_log(log) if r.get("event") == "round"]
    if recs:
        trims = [r for r in recs if "trim" in r.get("cleanup", []) or r.get("trim_steps")]
        out["cpu_us"] = statistics.mean(r["cleanup_cpu_us"] for r in recs)
        out["trim_rounds"] = len(trims)
        out["rounds"] = len(recs)
        out["trim_us"] = statistics.mean(r.get("trim_us", 0) + r.get("trim_steps_us", 0)
                                         for r in trims) if trims else 0
        out["holds"] = sum(r.get("trim_holds", 0) for r in recs)
        out["hold_max_us"] = max((r.get("trim_hold_max_us", 0) for r in recs), default=0)
        out["skips"] = sorted({r["trim_skipped"] for r in recs if r.get("trim_skipped")})
    return out


def hold_run(bench, variant, limit_ms, tmpdir, tag):
    argv = [bench.prog(HOLD[0])] + HOLD[1:]
    env = {}
    if variant == "hand":
        argv[argv.index("round")] = "trim"
    else:
        env = {"LD_PRELOAD": bench.LIB, "NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "1",
               "ROUNDTRIM_LOG": os.path.join(tmpdir, f"trim.{tag}.jsonl")}
        if limit_ms != LIMIT_MS:
            env["ROUNDTRIM_TRIM_PAUSE_MS"] = str(limit_ms)
    d = bench.json_lines(bench.run("trim", argv, env, timeout=600).stdout)[-1]
    released = (d["rss_before"] - d["rss_after"]) / bench.MIB
    return {"blocked_us": d["blocked_cleanup_us"], "cleanup_us": d["cleanup_us"],
            "rss_after": d["rss_after"], "released_mib": released,
            "rate_us_per_mib": d["cleanup_us"] / released if released > 0 else float("nan")}


def section(bench, cfg, tmpdir):
    reps, rounds = cfg.get("trim_reps", 3), cfg.get("trim_rounds", 8)
    frag = {c: {v: [] for v in ("bare", "hand", "roundtrim", "fixed")} for c in CONDITIONS}
    py = {c: {v: [] for v in ("bare", "roundtrim")} for c in CONDITIONS}
    holds = {c: {v: [] for v in ("hand", "roundtrim", "roundtrim 20 ms")} for c in CONDITIONS}
    n = 0
    for rep in range(reps):
        for cond in (CONDITIONS if rep % 2 == 0 else CONDITIONS[::-1]):
            with Hogs(bench, cond == "loaded"):
                order = list(frag[cond]) if rep % 2 == 0 else list(frag[cond])[::-1]
                for v in order:
                    n += 1
                    lines, log = frag_run(bench, v, rounds, tmpdir, n)
                    frag[cond][v].append(summarize(lines, log, bench))
                for v in py[cond]:
                    n += 1
                    lines, log = python_run(bench, v, rounds, tmpdir, n)
                    py[cond][v].append(summarize(lines, log, bench))
                for v in holds[cond]:
                    n += 1
                    limit = 20 if v.endswith("20 ms") else LIMIT_MS
                    holds[cond][v].append(hold_run(bench, v.split()[0], limit, tmpdir, n))
    return {"reps": reps, "rounds": rounds, "frag": frag, "python": py, "hold": holds,
            "limit_ms": LIMIT_MS}


def med(runs, key):
    xs = [r[key] for r in runs if key in r]
    return statistics.median(xs) if xs else float("nan")


def spread(bench, runs, key, scale, digits=1):
    """median (min-max) of the runs."""
    xs = [r[key] / scale for r in runs if key in r]
    if not xs:
        return "n/a"
    return (f"{bench.fmt(statistics.median(xs), digits)} ({bench.fmt(min(xs), digits)}-"
            f"{bench.fmt(max(xs), digits)})")


def section_md(bench, res):
    mib = bench.MIB
    rate = {c: med(res["hold"][c]["hand"], "rate_us_per_mib") / 1000 for c in CONDITIONS}
    out = ["## 11. Trim: roundtrim's against the program's own, quiet and loaded", "",
           f"This machine trims glibc's heap at **{bench.fmt(rate['quiet'], 2)} ms per MiB** "
           f"given back quiet and {bench.fmt(rate['loaded'], 2)} ms per MiB with two CPU-bound "
           "processes beside it (the program's own `malloc_trim(0)` of a 1 GiB heap in 4 "
           "threads: wall time per MiB of RSS it returned). roundtrim's glibc trim is its own walk "
           f"of the free lists, in holds each under ROUNDTRIM_TRIM_PAUSE_MS ({res['limit_ms']} "
           "ms), the pages given back many ranges a system call where the kernel allows "
           "(section 13). "
           f"Medians (min-max) of {res['reps']} runs of {res['rounds']} rounds each, "
           "interleaved; end-of-round RSS is the program's own reading after its 1 s wait, from "
           "round 3 on.", ""]
    rows = []
    for cond in CONDITIONS:
        f = res["frag"][cond]
        hand = med(f["hand"], "rss")
        for v in ("bare", "hand", "roundtrim", "fixed"):
            runs = f[v]
            r = med(runs, "rss")
            cpu = med(runs, "cpu_us") if v in ("roundtrim", "fixed") else med(runs, "hand_cpu_us")
            wall = med(runs, "trim_us") if v in ("roundtrim", "fixed") else med(runs, "hand_us")
            holds = f"{med(runs, 'holds'):.0f}, longest {bench.fmt(med(runs, 'hold_max_us') / 1000)} ms" \
                if v in ("roundtrim", "fixed") and med(runs, "holds") > 0 else "-"
            skips = sorted({s for x in runs for s in x.get("skips", [])})
            rows.append([cond, v, spread(bench, runs, "rss", mib), bench.pct(r / hand),
                         bench.fmt(wall / 1000) if v != "bare" else "-",
                         bench.fmt(cpu / 1000) if v != "bare" else "-", holds,
                         ", ".join(skips) or "-"])
    out += ["**The fragmenting workload** (`fl_workload`, 4 threads, 472 MiB of 64-4,064-byte "
            "blocks a round, 1 s idle). Trim ms: the program's own malloc_trim (hand) or the "
            "mean trim time of the rounds that trimmed (roundtrim, its holds and the gaps between "
            "them included); CPU ms: the program's trim CPU (hand) or the records' mean "
            "cleanup_cpu_us a round. Goal: roundtrim within 5% of hand quiet and 10% loaded, its "
            "cleanup CPU at most 1.3 times hand's.", "",
            bench.md_table(["machine", "variant", "end-of-round RSS MiB", "vs hand", "trim ms",
                            "CPU ms/round", "holds", "trim skips"], rows), ""]
    rows = []
    for cond in CONDITIONS:
        p = res["python"][cond]
        bare = med(p["bare"], "rss")
        for v in ("bare", "roundtrim"):
            rows.append([cond, v, spread(bench, p[v], "rss", mib),
                         bench.pct(med(p[v], "rss") / bare)])
    out += ["**Never worse than without:** a Python program whose 4 threads fragment the heap "
            "(`frag_threads.py`: 20,000 bytearrays of 600-4,000 bytes each a round, every 5th "
            "kept). Goal: roundtrim at most 2% over bare.", "",
            bench.md_table(["machine", "variant", "end-of-round RSS MiB", "vs bare"], rows), ""]
    rows = []
    for cond in CONDITIONS:
        for v, runs in res["hold"][cond].items():
            limit = 20 if v.endswith("20 ms") else res["limit_ms"]
            rows.append([cond, v, "-" if v == "hand" else limit,
                         spread(bench, runs, "blocked_us", 1000),
                         spread(bench, runs, "cleanup_us", 1000),
                         spread(bench, runs, "rss_after", mib)])
    out += ["**The longest stall:** `bench_cleanup --mode round`, a 1 GiB heap whose 4 threads "
            "keep calling malloc and free while the cleanup runs; blocked: a probe's longest "
            "call less the time it waited for a CPU. hand: the program's own malloc_trim(0) "
            "from its main thread. Goal: the longest stall at most the limit + 20%.", "",
            bench.md_table(["machine", "variant", "limit ms", "longest blocked ms", "cleanup ms",
                            "RSS after MiB"], rows), ""]
    return out


def standalone(section_fn, section_md_fn, key, prefix):
    """Runs one section alone, as its file's main: --reps, --rounds and --json, then prints the
    section's markdown. key names the section's cfg entries (KEY_reps, KEY_rounds)."""
    import argparse
    import json
    import tempfile
    import bench  # beside this file, on the path as the folder of the script that runs
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        res = section_fn(bench, {f"{key}_reps": a.reps, f"{key}_rounds": a.rounds}, tmp)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("\n".join(section_md_fn(bench, res)))


if __name__ == "__main__":
    standalone(section, section_md, "trim", "roundtrim-trim.")
