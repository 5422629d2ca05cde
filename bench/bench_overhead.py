"""Section 1 of make bench: the hot path's cost, instructions per malloc/free pair (callgrind,
two pair counts, so that start-up cost cancels out) and wall time, bare and under the shim, on
glibc and jemalloc."""

import concurrent.futures
import os
import shutil

from bench_common import (  # noqa: E402
    allocator_env,
    callgrind_functions,
    callgrind_run,
    callgrind_total,
    fmt,
    json_lines,
    md_table,
    median,
    pct,
    prog,
    run)
from bench_sites import FLOOR  # noqa: E402


def overhead_variants(alloc):
    """bare, the shim, and for glibc the counting floor (tests/bench/interposer/), the thinnest
    interposer that counts what roundtrim counts: what roundtrim adds above any such."""
    floor = alloc == "glibc" and os.path.exists(FLOOR)
    return ("bare", "floor", "shim") if floor else ("bare", "shim")


def instructions_per_pair(cfg, tmpdir, pool):
    """Runs every (allocator, mix, variant) at two pair counts under callgrind, in parallel (the
    counts do not depend on load); Ir per pair is the difference over the difference."""
    jobs = {}
    for alloc in cfg["allocators"]:
        for mix in cfg["mixes"]:
            for variant in overhead_variants(alloc):
                for n in cfg["cg_pairs"]:
                    argv = [prog("bench_alloc"), "--mix", mix, "--pairs", n, "--warmup",
                            cfg["cg_warmup"], "--threads", 1]
                    env = ({"LD_PRELOAD": FLOOR} if variant == "floor"
                           else allocator_env(alloc, variant == "shim"))
                    tag = f"{alloc}.{mix}.{variant}.{n}"
                    jobs[(alloc, mix, variant, n)] = pool.submit(
                        callgrind_run, "overhead", argv, env, tmpdir, tag)
    n1, n2 = cfg["cg_pairs"]
    rows, breakdown = [], {}
    for alloc in cfg["allocators"]:
        for mix in cfg["mixes"]:
            per = {}
            files = {}
            for variant in overhead_variants(alloc):
                f1, f2 = jobs[(alloc, mix, variant, n1)].result(), jobs[(alloc, mix, variant, n2)].result()
                per[variant] = (callgrind_total(f2) - callgrind_total(f1)) / (n2 - n1)
                if variant != "floor":
                    files[variant] = (f1, f2)
            rows.append({"allocator": alloc, "mix": mix, "bare_ir": per["bare"],
                         "shim_ir": per["shim"], "ratio": per["shim"] / per["bare"],
                         "floor_ir": per.get("floor")})
            if mix == "small":
                breakdown[alloc] = function_breakdown(files, n2 - n1)
    return rows, breakdown


def function_breakdown(files, pairs):
    """Ir per pair of each function, bare and shim (difference of the two runs of each)."""
    per = {}
    for variant, (f1, f2) in files.items():
        a, b = callgrind_functions(f1), callgrind_functions(f2)
        per[variant] = {k: (b.get(k, 0) - a.get(k, 0)) / pairs for k in set(a) | set(b)}
    keys = set(per["bare"]) | set(per["shim"])
    rows = [(k, per["bare"].get(k, 0.0), per["shim"].get(k, 0.0)) for k in keys]
    rows = [r for r in rows if max(abs(r[1]), abs(r[2])) >= 0.5]
    rows.sort(key=lambda r: -max(r[1], r[2]))
    return rows


def wall_overhead(cfg):
    """ns per pair, bare vs shim, interleaved: each repetition runs every configuration's
    variants back to back (alternating which goes first) and takes the ratio of the pair."""
    configs = []
    for alloc in cfg["allocators"]:
        for mix in cfg["wall_mixes"]:
            for threads in (1, 2):
                variants = [("bare", allocator_env(alloc, False)),
                            ("shim", allocator_env(alloc, True))]
                if alloc == "glibc":
                    variants.append(("shim, ROUNDTRIM_ARENA_MAX=0",
                                     allocator_env(alloc, True, {"ROUNDTRIM_ARENA_MAX": "0"})))
                configs.append((alloc, mix, threads, variants))
    samples = {}
    for rep in range(cfg["wall_reps"]):
        for alloc, mix, threads, variants in configs:
            order = variants if rep % 2 == 0 else list(reversed(variants))
            for name, env in order:
                argv = [prog("bench_alloc"), "--mix", mix, "--threads", threads, "--pairs",
                        cfg["wall_pairs"][mix]]
                res = json_lines(run("overhead", argv, env).stdout)[0]
                samples.setdefault((alloc, mix, threads, name), []).append(
                    (res["ns_per_pair"], res["cpu_ns_per_pair"]))
    rows = []
    for alloc, mix, threads, variants in configs:
        bare = samples[(alloc, mix, threads, "bare")]
        for name, _ in variants[1:]:
            shim = samples[(alloc, mix, threads, name)]
            ratios = [s[0] / b[0] for s, b in zip(shim, bare)]
            cpu_ratios = [s[1] / b[1] for s, b in zip(shim, bare)]
            rows.append({"allocator": alloc, "mix": mix, "threads": threads, "variant": name,
                         "bare_ns": median([b[0] for b in bare]),
                         "shim_ns": median([s[0] for s in shim]),
                         "ratio": median(ratios), "ratio_min": min(ratios),
                         "ratio_max": max(ratios), "reps": len(ratios),
                         "bare_cpu_ns": median([b[1] for b in bare]),
                         "shim_cpu_ns": median([s[1] for s in shim]),
                         "cpu_ratio": median(cpu_ratios)})
    return rows


def section_overhead(cfg, tmpdir):
    result = {"cg_pairs": cfg["cg_pairs"], "wall_pairs": cfg["wall_pairs"],
              "wall_reps": cfg["wall_reps"]}
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            result["instructions"], result["breakdown"] = instructions_per_pair(cfg, tmpdir, pool)
    else:
        result["instructions_skipped"] = ("valgrind is not installed "
                                          "(apt-get install valgrind)")
    result["wall"] = wall_overhead(cfg)
    return result


def section_md_overhead(res):
    out = ["## 1. Hot-path overhead", ""]
    out.append(
        "`tests/bench/bench_alloc.c` replaces one block of a window of 1024 live blocks per "
        "iteration (a `free` and a `malloc` of a size taken from a precomputed table): "
        "**small** 16-512 B; **medium** 1-64 KiB; **mixed** 90% small, 9.8% medium, 0.2% "
        "large (256 KiB-1 MiB). No boundary happens during these runs, so the shim runs its "
        "fast path only (counting, no worker thread): what every process pays.")
    out.append("")
    if "instructions" in res:
        n1, n2 = res["cg_pairs"]
        out += ["### Instructions per malloc/free pair (callgrind)", "",
                f"Each variant runs under `valgrind --tool=callgrind` at {n1:,} and {n2:,} pairs "
                "(same warm-up); instructions per pair = difference of the totals / "
                f"{n2 - n1:,}, so start-up and the shim's constructor cancel out. "
                "Counts are deterministic: one run each.", ""]
        def floor_cells(r):
            f = r.get("floor_ir")
            if f is None:
                return ["-", "-"]
            return [fmt(f), f"{fmt(r['shim_ir'] - f)} ({pct(r['shim_ir'] / f)})"]

        rows = [[r["allocator"], r["mix"], fmt(r["bare_ir"]), fmt(r["shim_ir"]),
                 fmt(r["shim_ir"] - r["bare_ir"]), pct(r["ratio"])] + floor_cells(r)
                for r in res["instructions"]]
        out.append(md_table(["allocator", "mix", "bare Ir/pair", "shim Ir/pair", "added",
                             "ratio", "counting floor Ir/pair", "shim above the floor"], rows))
        out.append("")
        for alloc, rows in res.get("breakdown", {}).items():
            out += [f"Where the instructions of a small-block pair go, {alloc} "
                    "(exclusive Ir per pair by function, from `callgrind_annotate`; the shim's "
                    "inlined helpers are listed under their own header):", ""]
            out.append(md_table(["function [object]", "bare", "shim"],
                                [[f"`{k}`", fmt(b), fmt(s)] for k, b, s in rows]))
            out.append("")
    else:
        out += [f"Instruction counts: not run ({res.get('instructions_skipped')}).", ""]
    out += ["### Wall time per pair", "",
            "ns per pair (timed loop only, after the warm-up) at "
            + ", ".join(f"{n:,} ({mix})" for mix, n in res["wall_pairs"].items())
            + f" pairs per thread; {res['wall_reps']} repetitions, each running the variants of a "
            "configuration back to back (order alternating); ratio = median of the per-repetition "
            "ratios (range in brackets). With 2 threads each thread runs the same loop at the same "
            "time on its own core. The CPU-time ratio uses each thread's own CPU time "
            "(`CLOCK_THREAD_CPUTIME_ID`), which time spent descheduled by other load does not "
            "inflate. `ROUNDTRIM_ARENA_MAX=0` keeps glibc's own arena count: the default cap of 2 "
            "can put the second thread into the main (brk) arena, which is an arena effect, not "
            "a counter one.", ""]
    rows = [[w["allocator"], w["mix"], w["threads"], w["variant"], fmt(w["bare_ns"], 2),
             fmt(w["shim_ns"], 2),
             f"{pct(w['ratio'])} ({pct(w['ratio_min'])} .. {pct(w['ratio_max'])})",
             pct(w.get("cpu_ratio", float("nan")))]
            for w in res["wall"]]
    out.append(md_table(["allocator", "mix", "threads", "variant", "bare ns", "shim ns",
                         "wall ratio", "CPU-time ratio"], rows))
    out.append("")
    return out
