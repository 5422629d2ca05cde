"""Section 8 of make bench: what reading the memory breakdown costs per round against a heap of
several GiB (beside smaps_rollup and mallinfo2), its instructions per round, and the per-round
wall time of the PyTorch FL-like client with and without the sites sampling a leak's site needs."""

import os
import shutil
import subprocess
import time

from bench_common import (  # noqa: E402
    COMMANDS,
    LIB,
    MIB,
    PY,
    PY_CLIENT,
    ROOT,
    callgrind_total,
    clean_env,
    fmt,
    json_lines,
    md_table,
    median,
    prog,
    read_log,
    run)


def breakdown_costs(cfg, tmpdir):
    """tests/bench/breakdown_cost at each heap size: per source, the median over the rounds
    after the first (roundtrim's read_us from its records, the others timed by the program)."""
    rows = []
    for gib in cfg["diag_gib"]:
        log = os.path.join(tmpdir, f"diag.{gib}.jsonl")
        argv = [prog("breakdown_cost"), "--gib", gib, "--rounds", cfg["diag_rounds"]]
        out = json_lines(run("diagnosis", argv, {"LD_PRELOAD": LIB, "ROUNDTRIM_LOG": log,
                                                 "ROUNDTRIM_GC_ROUNDS": "0"}).stdout)[1:]
        rounds = [r for r in read_log(log) if r.get("event") == "round" and r.get("memory")][1:]
        last = rounds[-1]["memory"] if rounds else {}
        rows.append({
            "gib": gib, "rss": median([r["rss"] for r in out]),
            "read_us": median([r["memory"]["read_us"] for r in rounds]),
            "status_us": median([r["status_us"] for r in out]),
            "smaps_rollup_us": median([r["smaps_rollup_us"] for r in out]),
            "mallinfo2_us": median([r["mallinfo2_us"] for r in out]),
            "heap_free": last.get("heap_free"), "mallinfo2_free": out[-1]["mallinfo2_free"]})
    return rows


def breakdown_instructions(tmpdir):
    """Instructions of roundtrim_memory_parts_read per round (callgrind, collecting inside it
    only), on the native leak of the diagnosis tests (12 rounds, a small heap)."""
    out = os.path.join(tmpdir, "cg.diag")
    argv = [prog("diag_native"), "leak", 12]
    env = {"LD_PRELOAD": LIB, "ROUNDTRIM_GC_ROUNDS": "0",
           "ROUNDTRIM_LOG": os.path.join(tmpdir, "cg.diag.jsonl")}
    vg = ["valgrind", "--tool=callgrind", "--toggle-collect=roundtrim_memory_parts_read",
          f"--callgrind-out-file={out}"]
    COMMANDS.add("diagnosis", env, vg[:3] + ["--callgrind-out-file=OUT"] + argv)
    proc = subprocess.run(vg + [str(a) for a in argv], env=clean_env(env), capture_output=True,
                          text=True, timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind diag_native failed: {proc.stderr.strip()[-800:]}")
    rounds = [r for r in read_log(env["ROUNDTRIM_LOG"])
              if r.get("event") == "round" and r.get("memory")]
    return {"total": callgrind_total(out), "rounds": len(rounds)}


def fl_sites_cost(cfg, tmpdir):
    """Wall time per round of the PyTorch FL-like client: bare, roundtrim with sites off, with
    sites on (the default sampling interval), interleaved; medians of the reps."""
    variants = [("bare", {}), ("roundtrim", {"LD_PRELOAD": LIB}),
                ("roundtrim + sites", {"LD_PRELOAD": LIB, "ROUNDTRIM_SITES": "true"})]
    argv = [PY, PY_CLIENT, "--rounds", cfg["diag_fl_rounds"], "--width", cfg["py_width"],
            "--wait", 0]
    walls = {name: [] for name, _ in variants}
    reads = []
    for rep_no in range(cfg["diag_fl_reps"]):
        order = variants if rep_no % 2 == 0 else variants[::-1]
        for name, env in order:
            env = dict(env, ROUNDTRIM_PY_HOOK="fl_task:train_round")
            if "LD_PRELOAD" in env:
                env["ROUNDTRIM_LOG"] = os.path.join(tmpdir, f"fl.{rep_no}.{len(reads)}.jsonl")
            t0 = time.monotonic()
            run("diagnosis", argv, env, timeout=900)
            walls[name].append(time.monotonic() - t0)
            if "LD_PRELOAD" in env:
                reads += [r["memory"]["read_us"] for r in read_log(env["ROUNDTRIM_LOG"])
                          if r.get("event") == "round" and r.get("memory")]
    return {"per_round_ms": {n: median(w) * 1000 / cfg["diag_fl_rounds"]
                             for n, w in walls.items()},
            "read_us": median(reads) if reads else None, "rounds": cfg["diag_fl_rounds"],
            "reps": cfg["diag_fl_reps"]}


def section_diagnosis(cfg, tmpdir):
    result = {"sizes": breakdown_costs(cfg, tmpdir)}
    if shutil.which("valgrind"):
        result["instructions"] = breakdown_instructions(tmpdir)
    if os.path.exists(PY_CLIENT):
        result["fl"] = fl_sites_cost(cfg, tmpdir)
    return result


def section_md_diagnosis(res):
    out = ["## 8. The diagnosis: what reading the memory breakdown costs", "",
           "Every round record splits RSS into parts (`memory`): the live heap from roundtrim's "
           "own counters, the freed heap kept resident (glibc: the arenas' resident pages, "
           "`/proc/self/maps` and `mincore`), the rest from `/proc/self/status`. "
           "`tests/bench/breakdown_cost` builds a heap of N GiB of 2 KiB blocks and frees every "
           "other one (half of it free in hundreds of thousands of chunks), then ends rounds; "
           "roundtrim's time is its records' `memory.read_us`, the other sources are timed by "
           "the program itself each round (medians, first round left out). `mallinfo2` holds "
           "each arena's lock for its walk; `smaps_rollup` walks every page table.", ""]
    rows = []
    for r in res.get("sizes", []):
        err = (abs(r["heap_free"] - r["mallinfo2_free"]) / r["mallinfo2_free"]
               if r.get("heap_free") is not None and r["mallinfo2_free"] else None)
        rows.append([f"{r['gib']} GiB", f"{r['rss'] / MIB:,.0f}", fmt(r["read_us"] / 1000, 2),
                     fmt(r["status_us"] / 1000, 2), fmt(r["smaps_rollup_us"] / 1000, 1),
                     fmt(r["mallinfo2_us"] / 1000, 1),
                     "n/a" if err is None else f"{err * 100:.2f}%"])
    out += [md_table(["heap", "RSS MiB", "roundtrim breakdown ms", "status ms",
                      "smaps_rollup ms", "mallinfo2 ms", "heap_free vs mallinfo2 free"], rows),
            ""]
    ins = res.get("instructions")
    if ins and ins["rounds"]:
        out += [f"Instructions of the breakdown (`roundtrim_memory_parts_read`, callgrind "
                f"collecting inside it only) on `diag_native leak` (a 6-72 MiB heap): "
                f"**{ins['total'] / ins['rounds']:,.0f}** per round over {ins['rounds']} rounds.",
                ""]
    fl = res.get("fl")
    if fl:
        ms = fl["per_round_ms"]
        out += [f"The PyTorch FL-like client (`tests/python/fl_client.py`, {fl['rounds']} rounds, "
                f"median of {fl['reps']} runs each, interleaved): the whole run's wall time "
                "divided by its rounds (torch's import included, and under roundtrim the client "
                "role's cleanup every round: gc and trim), bare, under roundtrim, and with the "
                "sites sampling a leak's site needs; then the breakdown's own read time in the "
                "records. Medians of a few whole runs on a shared 2-core machine are rough: "
                "where sites on measures faster than sites off, that is noise, not a gain.", "",
                md_table(["variant", "ms per round"], [[n, fmt(v, 1)] for n, v in ms.items()]),
                "", f"Breakdown read per round in this client: median "
                f"{fmt((fl['read_us'] or 0) / 1000, 2)} ms.", ""]
    return out
