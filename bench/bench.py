#!/usr/bin/python3
"""make bench: runs roundtrim's benchmarks side by side with the alternatives and writes
docs/performance.md (figures, machine, exact commands) and its plots under docs/bench/.

Sections (each comparison runs all its variants in this one invocation, interleaved and
repeated, and reports medians and ratios; the machine is shared and noisy):
  1. hot-path overhead: instructions per malloc/free pair (callgrind, two pair counts, so that
     start-up cost cancels out) and wall time, bare and under the shim, on glibc and jemalloc;
  2. CUDA interposition cost per cuMemAlloc/cuMemFree pair against the stand-in driver;
  3. effectiveness: RSS per round over >= 30 rounds of the native FL-like workload and of the
     PyTorch FL-like client, for every way users have to keep RSS down;
  4. cleanup cost against heap size and threads, and the longest malloc stall meanwhile;
  5. allocation sites: instructions per pair against a counting floor (an interposer of our
     own), sampling off and on against the bare process and heaptrack on three workloads, and
     whether each tool names a planted leak, after how many rounds;
  6. start-up: instructions and wall time of /bin/true and python3 -c pass, bare, with an
     empty preload, the counting floor, roundtrim and jemalloc, and where roundtrim's go;
  7. whole programs: the instructions of gcc, git and Python over every process they start, as
     ratios to bare;
  8. the diagnosis: what reading the memory breakdown costs per round against a heap of several
     GiB (beside smaps_rollup and mallinfo2), its instructions per round, and the per-round wall
     time of the PyTorch FL-like client with and without the sites sampling a leak's site needs.
  9. the cleanup policy: five workloads (native fragmenting, PyTorch client, a leak, a program
     that collects itself, a 1 GiB heap with 4 threads) under the fixed period and under the
     adaptive policy: end-of-round RSS, cleanup CPU per round, longest heartbeat wait
     (bench/bench_policy.py).
 10. the defaults: the arena cap and mmap threshold the roles default to, chosen from end-of-round
     and peak RSS, CPU per round and trim time over 1-16 threads, caps 0-8 and three thresholds,
     cleanup off, every round and under the policy (bench/bench_defaults.py, run as it is).
 11. the trim: roundtrim's against the program's own malloc_trim(0), quiet and beside two
     CPU-bound processes: end-of-round RSS, trim time and CPU of a fragmenting workload with 1 s
     idle a round, a Python program against bare, the longest blocked call of a 1 GiB heap's
     threads against the pause limit, and this machine's trim rate (bench/bench_trim.py).
 13. the trim where one release call is dear (60-100 us, emulated, beside this host as it is):
     end-of-round RSS, cleanup CPU, release calls and the longest stall of a fragmenting workload
     against its own malloc_trim(0), and jemalloc's purge (bench/bench_dear_trim.py).

    bench/bench.py [--quick] [--only SECTION[,SECTION...]] [--out FILE]

--quick (or BENCH_QUICK=1) runs everything at a small size (a minute or two, for trying the
driver); --only runs some sections (overhead, cuda, native, python, cleanup, sites, startup,
programs, diagnosis, policy, defaults, trim, dear_trim) and keeps the others as the previous run of the same report wrote them (from its
docs/bench/results.json; the report says which run each section comes from); --out writes the
report elsewhere (its plots go to a bench/ folder beside it). BUILD names the build folder.
"""


import argparse
import json
import os
import sys
import tempfile
import time
import traceback

# The sections are in files of their own beside this one.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
import bench_policy  # noqa: E402
import bench_trim  # noqa: E402
import bench_dear_trim  # noqa: E402
from bench_cleanup import plot_cleanup, section_cleanup, section_md_cleanup  # noqa: E402
from bench_common import (  # noqa: E402
    BUILD,
    COMMANDS,
    LIB,
    PY,
    ROOT,
    fmt,
    have_jemalloc,
    machine,
    md_table,
    pct,
    plural,
    prog,
    read_first,
    run,
    short_path,
    verdict)
from bench_cuda import section_cuda, section_md_cuda  # noqa: E402
from bench_diagnosis import section_diagnosis, section_md_diagnosis  # noqa: E402
from bench_effectiveness import (  # noqa: E402
    plot_effectiveness,
    section_md_effectiveness,
    section_native,
    section_python)
from bench_overhead import section_md_overhead, section_overhead  # noqa: E402
from bench_programs import section_md_programs, section_programs  # noqa: E402
from bench_sites import section_md_sites, section_sites  # noqa: E402
from bench_startup import STARTUP_GOAL, section_md_startup, section_startup  # noqa: E402


SECTIONS = ["overhead", "cuda", "native", "python", "cleanup", "sites", "startup", "programs",
            "diagnosis", "policy", "defaults", "trim", "dear_trim"]


def headline(results):
    """The targets of issues 2 and 6, each with the figure that decides it."""
    rows = []
    ov = results.get("overhead", {})
    for r in ov.get("instructions", []):
        if r["mix"] == "small":
            rows.append([f"instructions per malloc/free pair, small blocks, {r['allocator']}",
                         "at most +3%", f"{fmt(r['bare_ir'])} → {fmt(r['shim_ir'])} "
                         f"({pct(r['ratio'])})", verdict(r["ratio"] <= 1.03)])
            if r.get("floor_ir"):
                above = r["shim_ir"] / r["bare_ir"] - r["floor_ir"] / r["bare_ir"]
                rows.append([f"instructions per pair, small blocks, {r['allocator']}: roundtrim "
                             "against the counting floor, as shares of bare", "within 1 point",
                             f"{r['shim_ir'] / r['bare_ir']:.4f} vs {r['floor_ir'] / r['bare_ir']:.4f} "
                             f"({100 * above:+.1f} points)", verdict(above <= 0.01)])
    all_wall = ov.get("wall", [])
    wall = [w for w in all_wall if w["variant"] == "shim"]
    for w in wall:
        if w["mix"] == "small":
            rows.append([f"wall time per pair, small blocks, {w['allocator']}, "
                         f"{w['threads']} thread{'s' if w['threads'] > 1 else ''}",
                         "at most +3%", f"{fmt(w['bare_ns'], 2)} → {fmt(w['shim_ns'], 2)} ns "
                         f"({pct(w['ratio'])})", verdict(w["ratio"] <= 1.03)])
    # The small mix is the decisive one here: it stays in user space, where counters sharing a
    # cache line would show; the mixed one also pays page faults, which dominate its noise.
    for alloc in ("glibc", "jemalloc"):
        for mix in ("small",):
            for variant in ("shim", "shim, ROUNDTRIM_ARENA_MAX=0"):
                key = lambda w, t: (w["allocator"], w["mix"], w["threads"], w["variant"]) == (  # noqa
                    alloc, mix, t, variant)
                one = [w for w in all_wall if key(w, 1)]
                two = [w for w in all_wall if key(w, 2)]
                if one and two:
                    label = "" if variant == "shim" else " (ROUNDTRIM_ARENA_MAX=0)"
                    # Judged on CPU time: contention on a shared line costs CPU time too,
                    # while other load on the machine inflates only the wall time.
                    rows.append([f"2-thread ratio vs 1-thread ratio, {mix}, {alloc}{label}",
                                 "no worse (CPU time; 2 points of noise allowed)",
                                 f"CPU {pct(two[0]['cpu_ratio'])} vs {pct(one[0]['cpu_ratio'])}; "
                                 f"wall {pct(two[0]['ratio'])} vs {pct(one[0]['ratio'])}",
                                 verdict(two[0]["cpu_ratio"] <= one[0]["cpu_ratio"] + 0.02)])
    for sec in ("native", "python"):
        res = results.get(sec, {})
        vs = {v["name"]: v for v in res.get("variants", [])}
        manual = next((v for v in vs.values() if v["kind"] == "manual"), None)
        shim = vs.get("roundtrim defaults")
        if manual and shim:
            ratio = shim["median_mib"] / manual["median_mib"]
            rows.append([f"{sec} workload: end-of-round RSS, roundtrim defaults vs the program's "
                         "own cleanup", "at or below (issue 2: within 5%)",
                         f"{fmt(shim['median_mib'])} vs {fmt(manual['median_mib'])} MiB "
                         f"({pct(ratio)})", verdict(ratio <= 1.05)])
            zero = abs(shim["slope_mib"]) <= max(shim["slope_ci_mib"], 0.05)
            rows.append([f"{sec} workload: growth slope under roundtrim defaults", "zero",
                         f"{shim['slope_mib']:+.3f} ± {shim['slope_ci_mib']:.3f} MiB/round",
                         verdict(zero)])
    cl = results.get("cleanup", {})
    runs = [r for r in cl.get("by_size", []) + cl.get("by_threads", []) if r["variant"] == "round"]
    if runs:
        # The one-arena figure splits the cleanup time by free bytes: an estimate, hence 25%.
        excess = lambda r: r["blocked_cleanup_us"] / 1000 / r["one_arena_ms"]  # noqa: E731
        worst = max(runs, key=excess)
        rows.append(["longest malloc block during a roundtrim cleanup (less time waiting for "
                     "a CPU)", "at most one arena's trim (estimated: ±25%)",
                     f"worst case: {fmt(worst['blocked_cleanup_us'] / 1000)} ms vs "
                     f"{fmt(worst['one_arena_ms'])} ms one-arena trim ({worst['heap_mib']} MiB, "
                     f"{plural(worst['threads'], 'thread')}); longest block overall "
                     f"{fmt(max(r['blocked_cleanup_us'] for r in runs) / 1000)} ms",
                     verdict(excess(worst) <= 1.25)])
    for r in results.get("startup", {}).get("start", []):
        ins = r["instructions"]
        if r["program"].startswith("/bin/true") and "empty preload" in ins and "roundtrim" in ins:
            above = ins["roundtrim"] - ins["empty preload"]
            how = ", emptied environment" if "emptied" in r["program"] else ""
            rows.append([f"start-up instructions of `/bin/true` above an empty preload{how}",
                         f"at most {STARTUP_GOAL:,}", f"{above:,} ({ins['empty preload']:,} → "
                         f"{ins['roundtrim']:,})", verdict(above <= STARTUP_GOAL)])
    return md_table(["target", "goal", "measured", ""], rows)


def machine_rows(infos):
    """The machine table's rows, one column per reading."""
    def row(label, fn):
        return [label] + [fn(i) for i in infos]

    rows = [row("CPU", lambda i: f"{i['cpu']} ({i['cores']} cores available)"),
            row("memory", lambda i: f"{i['memory_gib']:.1f} GiB"),
            row("kernel", lambda i: i["kernel"]), row("glibc", lambda i: i["glibc"]),
            row("jemalloc", lambda i: f"libjemalloc2 {i['jemalloc']}"),
            row("compiler", lambda i: i["compiler"]), row("valgrind", lambda i: i["valgrind"]),
            row("python", lambda i: i["python"]), row("transparent huge pages", lambda i: i["thp"]),
            row("load average (1, 5, 15 min) at start / end",
                lambda i: f"{i['loadavg_start']} / {i.get('loadavg_end', '?')}")]
    if any("first_touch_us_per_page" in i for i in infos):
        rows.append(row("memory speed probe", lambda i: (
            f"first touch {i['first_touch_us_per_page']:.2f} µs per 4 KiB page; "
            f"`madvise(MADV_DONTNEED)` in 96 KiB pieces {i['madvise_96k_us_per_page']:.2f} µs per "
            "page (glibc's trim is a series of such calls, so its cost here follows this figure)")
            if "first_touch_us_per_page" in i else "not measured"))
    if any("release_call" in i for i in infos):
        rows.append(row("one release call (`release_call_cost`)", lambda i: (
            f"`madvise` of one page {i['release_call']['madvise_call_us']:.1f} µs; "
            + (f"`process_madvise` of 1,024 one-page ranges {i['release_call']['batch_call_us']:.0f}"
               f" µs ({i['release_call']['batch_range_us']:.2f} µs a range)"
               if i["release_call"].get("batch_call_us") is not None
               else "no `process_madvise` on oneself (kernel before 6.13)"))
            if "release_call" in i else "not measured"))
    return rows


def write_report(path, results, info, fig_dir, elapsed, errors, argv, provenance=None):
    rel = lambda p: os.path.relpath(p, os.path.dirname(path)) if p else None  # noqa: E731
    runs = {}
    for name in SECTIONS:
        p = (provenance or {}).get(name)
        if name in results and p:
            key = (p.get("date"), p.get("git"), " ".join(p.get("argv") or []))
            runs.setdefault(key, []).append(name)
    if len(runs) > 1:
        out = ["# roundtrim benchmarks", "",
               "Written by `make bench` (`bench/bench.py`) in several runs, each section by one "
               "run on this machine (`--only` refreshes some sections and keeps the others):", ""]
        out += [f"- {', '.join(names)}: `bench/bench.py{(' ' + a) if a else ''}` on {d} at "
                f"commit {g}" for (d, g, a), names in runs.items()]
        out += ["", "Each comparison ran its variants side by side, interleaved and repeated. The "
                "machine is shared: prefer the instruction counts and the ratios to the absolute "
                "times.", ""]
    else:
        out = ["# roundtrim benchmarks", "",
               f"Written by `make bench` (`bench/bench.py{(' ' + ' '.join(argv)) if argv else ''}`) "
               f"on {info['date']} in {elapsed / 60:.1f} minutes, at commit {info['git']}. Every "
               "figure below comes from that one run; each comparison ran its variants side by "
               "side, interleaved and repeated. The machine is shared: prefer the instruction "
               "counts and the ratios to the absolute times.", ""]
    if errors:
        out += ["**Sections that failed in this run:**", ""]
        out += [f"- {name}: `{err}`" for name, err in errors]
        out.append("")
    out += ["## Summary", "", headline(results), ""]
    out += ["## Machine", ""]
    # One column per run when sections come from several runs (each run's own machine reading).
    machines = [(names, (provenance or {}).get(names[0], {}).get("machine") or info)
                for names in runs.values()] if len(runs) > 1 else [([], info)]
    labels = ["", ""] if len(machines) == 1 else [""] + [", ".join(n) for n, _ in machines]
    out += [md_table(labels, machine_rows([m for _, m in machines])), ""]
    if "overhead" in results:
        out += section_md_overhead(results["overhead"])
    if "cuda" in results:
        out += section_md_cuda(results["cuda"])
    for sec in ("native", "python"):
        if sec in results:
            out += section_md_effectiveness(sec, results[sec], rel(results[sec].get("figure")))
    if "cleanup" in results:
        out += section_md_cleanup(results["cleanup"], rel(results["cleanup"].get("figure")))
    if "sites" in results:
        out += section_md_sites(results["sites"])
    if "startup" in results:
        out += section_md_startup(results["startup"])
    if "programs" in results:
        out += section_md_programs(results["programs"])
    if "diagnosis" in results:
        out += section_md_diagnosis(results["diagnosis"])
    if "policy" in results:
        out += bench_policy.section_md(bench_common, results["policy"])
    if "defaults" in results:
        text = results["defaults"]["markdown"]
        out += [text.replace("## Defaults:", "## 10. Defaults:", 1).rstrip("\n"), ""]
    if "trim" in results:
        out += bench_trim.section_md(bench_common, results["trim"])
    if "dear_trim" in results:
        out += bench_dear_trim.section_md(bench_common, results["dear_trim"])
    out += ["## Commands", "",
            "Every command the run executed, from the repository root (counts in brackets; "
            "`OUT` is a temporary file; `/tmp/roundtrim-bench` stands for the run's temporary "
            "folder). Build first with `make bench` (or `make` and "
            "`make build/tests/bench_alloc build/tests/bench_cleanup`).", ""]
    order = [s for s in SECTIONS if s in COMMANDS.by_section]
    order += [s for s in COMMANDS.by_section if s not in order]
    for sec, entries in ((s, COMMANDS.by_section[s]) for s in order):
        out += [f"**{sec}**", "", "```sh"]
        out += [f"{cmd}   # x{n}" if n > 1 else cmd for cmd, n in entries.items()]
        out += ["```", ""]
    out += ["Raw results: [`docs/bench/results.json`](" + rel(os.path.join(fig_dir, "results.json"))
            + ").", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def config(quick):
    full = {
        "allocators": ["glibc"] + (["jemalloc"] if have_jemalloc() else []),
        "mixes": ["small", "medium", "mixed"],
        "cg_pairs": (100000, 300000),
        "cg_warmup": 20000,
        "wall_mixes": ["small", "mixed"],
        "wall_pairs": {"small": 10000000, "mixed": 3000000},
        "wall_reps": 9,
        "cuda_pairs": 3000000,
        "cuda_reps": 7,
        "cuda_cg_pairs": (20000, 60000),
        "rounds": 30,
        "native_model_mib": 64,
        "native_pause_ms": 300,
        "py_width": 1024,
        "py_wait": 0.3,
        "cleanup_sizes": [64, 1024],
        "cleanup_max_mib": 4096,
        "cleanup_reps": 2,
        "cleanup_threads": 4,
        "cleanup_thread_counts": [1, 2, 4, 8],
        "cleanup_thread_mib": 256,
        "cleanup_budget_s": 150,
        "cleanup_thread_budget_s": 60,
        "sites_alloc_pairs": (100000, 300000),
        "sites_py_objects": (50000, 150000),
        "sites_fl_rounds": (2, 4),
        "sites_fl_width": 256,
        "sites_reps": 3,
        "sites_fl_callgrind": True,
        "sites_churn_mib": 100,
        "sites_detect_rounds": [1, 2, 3, 5, 8, 12],
        "start_reps": 30,
        "startup_top": 12,
        "diag_gib": [1, 3, 6],
        "diag_rounds": 6,
        "diag_fl_rounds": 12,
        "diag_fl_reps": 3,
        "policy_rounds": 16,
        "policy_reps": 3,
        "trim_rounds": 8,
        "trim_reps": 3,
        "dear_rounds": 8,
        "dear_reps": 3,
    }
    full["quick"] = quick
    if quick:
        full.update(mixes=["small"], cg_pairs=(20000, 60000), wall_pairs={"small": 1000000,
                                                                         "mixed": 300000},
                    wall_reps=3, cuda_pairs=100000, cuda_reps=3, cuda_cg_pairs=(2000, 6000),
                    rounds=30, native_model_mib=8, native_pause_ms=20, py_wait=0.02,
                    py_width=256, cleanup_sizes=[16, 64], cleanup_max_mib=64, cleanup_reps=1,
                    cleanup_thread_counts=[1, 2], cleanup_thread_mib=32, cleanup_budget_s=30,
                    cleanup_thread_budget_s=10, sites_alloc_pairs=(2000, 6000),
                    sites_py_objects=(2000, 6000), sites_fl_rounds=(1, 2), sites_fl_width=64,
                    sites_reps=1, sites_fl_callgrind=False, sites_churn_mib=4, sites_detect_rounds=[1, 2],
                    start_reps=3, diag_gib=[0.25], diag_rounds=3, diag_fl_rounds=4,
                    diag_fl_reps=1, policy_rounds=6, policy_reps=1, trim_rounds=4, trim_reps=1,
                    dear_rounds=4, dear_reps=1)
    return full


def section_defaults(cfg, tmpdir):
    """bench/bench_defaults.py as it is: its Markdown is the section (it names its commands)."""
    out = os.path.join(tmpdir, "defaults.md")
    argv = [PY, os.path.join(ROOT, "bench", "bench_defaults.py"), "--out", out]
    if cfg.get("quick"):
        argv.append("--quick")
    run("defaults", argv, {"BUILD": BUILD}, timeout=3600)
    with open(out) as f:
        return {"markdown": f.read()}


def previous_results(fig_dir):
    """The results.json of the previous run of this report, or {}."""
    try:
        with open(os.path.join(fig_dir, "results.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def keep_previous(previous, results, provenance, failed, fig_dir):
    """Sections this run did not run keep the previous run's results, commands and provenance
    (its machine reading included); their plots stay where they are. Returns the names kept."""
    kept = []
    before = previous.get("results", {})
    for name in SECTIONS:
        if name in results or name in failed or name not in before:
            continue  # run now, or failed now (reported as such, not hidden by an older run)
        results[name] = before[name]
        if results[name].get("figure"):
            results[name]["figure"] = os.path.join(fig_dir,
                                                   os.path.basename(results[name]["figure"]))
        machine = previous.get("machine", {})
        provenance[name] = previous.get("provenance", {}).get(name) or {
            "date": machine.get("date", "?"), "git": machine.get("git", "?"),
            "argv": previous.get("argv", []), "machine": machine}
        COMMANDS.by_section[name] = previous.get("commands", {}).get(name, {})
        kept.append(name)
    return kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    for s in only:
        if s not in SECTIONS:
            sys.exit(f"bench: unknown section {s!r} (sections: {', '.join(SECTIONS)})")
    needed = [LIB, prog("bench_alloc"), prog("bench_cleanup"), prog("fl_workload")]
    missing = [p for p in needed if not os.path.exists(p)]
    if missing:
        sys.exit(f"bench: {', '.join(map(short_path, missing))} missing: run 'make bench'")
    out_path = os.path.abspath(args.out)
    fig_dir = os.path.join(os.path.dirname(out_path), "bench")
    os.makedirs(fig_dir, exist_ok=True)
    previous = previous_results(fig_dir) if set(only) != set(SECTIONS) else {}
    cfg = config(args.quick)
    start = time.monotonic()
    info = machine()
    results, errors = {}, []
    sections = {"overhead": section_overhead, "cuda": section_cuda, "native": section_native,
                "python": section_python, "cleanup": section_cleanup, "sites": section_sites,
                "startup": section_startup, "programs": section_programs,
                "diagnosis": section_diagnosis,
                "policy": lambda cfg, tmpdir: bench_policy.section(bench_common, cfg,
                                                                   tmpdir),
                "defaults": section_defaults,
                "trim": lambda cfg, tmpdir: bench_trim.section(bench_common, cfg, tmpdir),
                "dear_trim": lambda cfg, tmpdir: bench_dear_trim.section(bench_common,
                                                                         cfg, tmpdir)}
    with tempfile.TemporaryDirectory(prefix="roundtrim-bench.") as tmpdir:
        bench_common.TMP_ROOT = tmpdir
        for name in SECTIONS:
            if name not in only:
                continue
            t0 = time.monotonic()
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            try:
                results[name] = sections[name](cfg, tmpdir)
            except Exception as e:  # a failed section is reported, the others still run
                traceback.print_exc()
                errors.append((name, str(e)[:600]))
                continue
            print(f"bench: {name} done in {time.monotonic() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    for sec in ("native", "python"):
        if sec in results and "variants" in results[sec]:
            results[sec]["figure"] = plot_effectiveness(sec, results[sec], fig_dir)
    if "cleanup" in results and "by_size" in results["cleanup"]:
        results["cleanup"]["figure"] = plot_cleanup(results["cleanup"], fig_dir)
    info["loadavg_end"] = read_first("/proc/loadavg")
    elapsed = time.monotonic() - start
    argv = sys.argv[1:]
    provenance = {name: {"date": info["date"], "git": info["git"], "argv": argv,
                         "elapsed_min": round(elapsed / 60, 1), "machine": info}
                  for name in results}
    failed = {name for name, _ in errors}
    kept = keep_previous(previous, results, provenance, failed, fig_dir)
    if kept:
        print(f"bench: kept {', '.join(kept)} from the previous run", file=sys.stderr)
    with open(os.path.join(fig_dir, "results.json"), "w") as f:
        json.dump({"machine": info, "config": cfg, "results": results,
                   "commands": COMMANDS.by_section, "errors": errors, "argv": argv,
                   "provenance": provenance}, f, indent=1, default=str)
    write_report(out_path, results, info, fig_dir, elapsed, errors, argv, provenance)
    print(f"bench: wrote {short_path(out_path)} in {elapsed / 60:.1f} minutes", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
