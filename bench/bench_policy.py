"""Section 9 of `make bench`: the fixed cleanup period against the adaptive policy.

Five workloads, each run under roundtrim with ROUNDTRIM_ADAPTIVE=false (every action on every
round, the client role's period) and with the defaults (the policy), interleaved:

  native fragmenting  tests/programs/fl_workload: 4 threads, a 64 MiB model a round
  PyTorch client      tests/python/fl_client.py: automatic gc off, a reference cycle a round
  leak                tests/python/policy_workloads.py leak: 400,000 tracked objects, no
                      cycles, 20,000 objects kept a round
  self-collecting     tests/python/policy_workloads.py self_collecting: the same graph, its own
                      gc.collect() each round (APPFL's habit)
  1 GiB heap          fl_workload with a 1 GiB model and 4 threads

Measured per run: the median end-of-round RSS over the second half of the rounds (the program's
own reading after its wait), the mean cleanup CPU per round (the records' cleanup_cpu_us: the
worker's and the Python helper's CPU time, all rounds), and the longest wait of the program's
heartbeat thread between a round's end and the next line (the native programs time their
malloc and free calls; the Python ones the lateness of a 1 ms sleep, which a gc holding the GIL
delays). Imported by bench/bench.py, which passes itself as `bench`."""

import os
import statistics

WORKLOADS = [
    # name, argv (after the interpreter or program), python, rounds key
    ("native fragmenting", ["fl_workload", "--threads", "4", "--model-mib", "64",
                            "--pause-ms", "200", "--probe-ms", "1", "--mode", "signal"], False),
    ("PyTorch client", ["fl_client.py", "--width", "1024", "--wait", "0.3",
                        "--probe-ms", "1"], True),
    ("leak", ["policy_workloads.py", "leak", "--wait", "0.2", "--probe-ms", "1"], True),
    ("self-collecting", ["policy_workloads.py", "self_collecting", "--wait", "0.2",
                         "--probe-ms", "1"], True),
    ("1 GiB heap, 4 threads", ["fl_workload", "--threads", "4", "--model-mib", "1024",
                               "--pause-ms", "1000", "--probe-ms", "1", "--mode", "signal"],
     False),
]

VARIANTS = [("fixed", {"ROUNDTRIM_ADAPTIVE": "false"}), ("policy", {})]


def argv_of(bench, workload, rounds):
    name, args, python = workload
    first = args[0]
    if python:
        argv = [bench.PY, os.path.join(bench.ROOT, "tests", "python", first)] + args[1:]
    else:
        argv = [bench.prog(first)] + args[1:]
    return argv + ["--rounds", str(rounds)]


def one_run(bench, workload, variant, rounds, tmpdir, index):
    name, _, python = workload
    vname, venv = variant
    log = os.path.join(tmpdir, f"policy.{index}.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    env = {"LD_PRELOAD": bench.LIB, "ROUNDTRIM_LOG": log}
    env.update(venv)
    if name == "PyTorch client":
        env["ROUNDTRIM_PY_HOOK"] = bench.PY_HOOK
    proc = bench.run("policy", argv_of(bench, workload, rounds), env, timeout=1200)
    lines = [r for r in bench.json_lines(proc.stdout) if "round" in r and "rss" in r]
    records = [r for r in bench.read_log(log) if r.get("event") == "round"]
    second_half = lines[len(lines) // 2:]
    skips = {}
    for r in records:
        for key in ("gc_skipped", "trim_skipped", "torch_empty_cache_skipped"):
            if r.get(key):
                k = f"{key[:-8]}:{r[key]}"
                skips[k] = skips.get(k, 0) + 1
    return {
        "rss": statistics.median(r["rss"] for r in second_half),
        "cpu_us": statistics.mean(r["cleanup_cpu_us"] for r in records) if records else 0,
        "wait_us": max((r.get("wait_max_us", 0) for r in lines), default=0),
        "actions": {a: sum(1 for r in records if a in r.get("cleanup", []))
                    for a in ("gc", "trim", "purge", "torch_empty_cache")},
        "skips": skips,
        "rounds": len(records),
    }


def section(bench, cfg, tmpdir):
    rounds = cfg["policy_rounds"]
    reps = cfg["policy_reps"]
    results = []
    index = 0
    for workload in WORKLOADS:
        if workload[2] and not os.path.exists(bench.PY):
            continue
        n = rounds if "1 GiB" not in workload[0] else max(4, rounds // 2)
        runs = {v[0]: [] for v in VARIANTS}
        for rep in range(reps):
            order = VARIANTS if rep % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                index += 1
                runs[variant[0]].append(one_run(bench, workload, variant, n, tmpdir, index))
        row = {"workload": workload[0], "rounds": n}
        for vname, rs in runs.items():
            row[vname] = {
                "rss": statistics.median(r["rss"] for r in rs),
                "cpu_us": statistics.median(r["cpu_us"] for r in rs),
                "wait_us": max(r["wait_us"] for r in rs),
                "actions": rs[0]["actions"],
                "skips": rs[0]["skips"],
            }
        results.append(row)
    return {"rows": results, "reps": reps, "pause_ms": 100}


def section_md(bench, res):
    mib = bench.MIB
    out = ["## 9. Cleanup policy: the fixed period against the adaptive policy", "",
           "Each workload runs under roundtrim twice, interleaved: **fixed** "
           "(`ROUNDTRIM_ADAPTIVE=false`: every action on every round) and **policy** (the "
           "defaults: each action when it gives memory back, a 20% CPU budget, a 100 ms trim "
           "pause limit). End-of-round RSS: median over the second half of the rounds (the "
           "program's own reading after its wait); cleanup CPU: mean of the records' "
           "`cleanup_cpu_us` over all rounds (the worker's and the Python helper's CPU); "
           "longest wait: the program's heartbeat thread from a round's end to the next line "
           "(native: its longest malloc or free; Python: its longest lateness past a 1 ms "
           "sleep). Medians of "
           f"{res['reps']} runs each. Goal: RSS within 2% of fixed, cleanup CPU at 10% or less "
           "of fixed's on the leak and self-collecting workloads, longest wait under the "
           "pause limit.", ""]
    rows = []
    for row in res["rows"]:
        f, p = row["fixed"], row["policy"]
        rss_ratio = p["rss"] / f["rss"] if f["rss"] else float("nan")
        cpu_ratio = p["cpu_us"] / f["cpu_us"] if f["cpu_us"] else float("nan")
        actions = ", ".join(f"{a} {n}" for a, n in p["actions"].items() if n)
        skips = ", ".join(f"{k} {n}" for k, n in sorted(p["skips"].items()))
        rows.append([row["workload"], row["rounds"], bench.fmt(f["rss"] / mib),
                     bench.fmt(p["rss"] / mib), bench.pct(rss_ratio),
                     bench.fmt(f["cpu_us"] / 1000, 2), bench.fmt(p["cpu_us"] / 1000, 2),
                     "n/a" if cpu_ratio != cpu_ratio else f"{cpu_ratio * 100:.0f}%",
                     bench.fmt(f["wait_us"] / 1000, 1), bench.fmt(p["wait_us"] / 1000, 1),
                     actions or "-", skips or "-"])
    out += [bench.md_table(["workload", "rounds", "fixed RSS MiB", "policy RSS MiB", "RSS vs fixed",
                            "fixed CPU ms/round", "policy CPU ms/round", "policy CPU / fixed",
                            "fixed longest wait ms", "policy longest wait ms",
                            "policy actions (first run)", "policy skips (first run)"], rows), ""]
    return out
