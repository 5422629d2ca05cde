#!/usr/bin/python3
"""Section 13 of `make bench`: the trim where one page-release system call is dear.

glibc's malloc_trim(0) makes one madvise(MADV_DONTNEED) call per free chunk, and the call is what
costs: about 1 us on one host, 60-100 us on another of the same kind whose page tables are
virtualized in software. roundtrim's trim gives the same pages back in batches, up to 1,024 ranges
a process_madvise call (Linux 6.13+), or one madvise a range, largest first, on older kernels.

  workload   tests/programs/fl_workload: 4 threads, each round 128 MiB of 64-4,064-byte blocks,
             every 5th kept into the next round, then 1 s idle; a heartbeat thread times a
             malloc/free every millisecond (its longest call is the program's longest stall)
  hosts      this host as it is, and a dear host emulated by build/tests/libslow_release.so:
             each of roundtrim's release calls spins 80 us (+3 us a range for process_madvise)
             before it reaches the kernel; "no batch" also refuses process_madvise, as kernels
             before 6.13 do
  variants   bare; hand (the program's own malloc_trim(0) after each round); roundtrim (the
             defaults, rounds marked by a signal); jemalloc bare and with roundtrim (its purge),
             where libjemalloc2 is installed

glibc's own madvise calls are inside libc, where no preload reaches: on the emulated host the
hand trim's CPU is its measured CPU plus its calls (counted with strace, beside a bare run) times
the emulated cost less this host's. Each variant runs quiet and loaded (two CPU-bound processes
beside it), interleaved, `reps` times. Imported by bench/bench.py, which passes itself as
`bench`; also runs alone: `bench/bench_dear_trim.py [--reps N] [--rounds N]` prints the
section's markdown."""

import os
import re
import resource
import shutil
import statistics
import tempfile

import bench_trim  # the CPU-bound neighbours of the loaded condition

FRAG = ["fl_workload", "--threads", "4", "--model-mib", "128", "--min-bytes", "64",
        "--max-bytes", "4064", "--keep-every", "5", "--pause-ms", "1000", "--probe-ms", "1"]
CALL_US, RANGE_US = 80, 3  # the emulated dear host
CONDITIONS = ["quiet", "loaded"]
LIMIT_MS = 100  # ROUNDTRIM_TRIM_PAUSE_MS's default
GLIBC_VARIANTS = [("this host", "bare"), ("this host", "hand"), ("this host", "roundtrim"),
                  ("dear", "roundtrim"), ("dear", "roundtrim, no batch")]
JE_VARIANTS = [("this host", "jemalloc"), ("this host", "jemalloc + roundtrim"),
               ("dear", "jemalloc"), ("dear", "jemalloc + roundtrim")]


def slow_lib(bench):
    return os.path.join(bench.BUILD, "tests", "libslow_release.so")


def release_call_cost(bench):
    """This host's cost of one release call, and the emulated dear host's."""
    argv = [bench.prog("release_call_cost")]
    here = bench.json_lines(bench.run("dear_trim", argv).stdout)[-1]
    env = {"LD_PRELOAD": slow_lib(bench), "SLOW_RELEASE_CALL_US": str(CALL_US),
           "SLOW_RELEASE_RANGE_US": str(RANGE_US)}
    dear = bench.json_lines(bench.run("dear_trim", argv, env).stdout)[-1]
    return {"this host": here, "dear": dear}


def variant_env(bench, host, variant, log):
    preload, env = [], {}
    if "roundtrim" in variant:
        preload.append(bench.LIB)
        env["ROUNDTRIM_LOG"] = log
    if host == "dear":
        preload.append(slow_lib(bench))
        env.update({"SLOW_RELEASE_CALL_US": str(CALL_US), "SLOW_RELEASE_RANGE_US": str(RANGE_US)})
        if "no batch" in variant:
            env["SLOW_RELEASE_NO_BATCH"] = "1"
    if variant.startswith("jemalloc"):
        preload.append(bench.JEMALLOC)
        env["MALLOC_CONF"] = bench.JEMALLOC_CONF
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    return env


def one_run(bench, host, variant, rounds, tmpdir, tag):
    log = os.path.join(tmpdir, f"dear.{tag}.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    mode = {"bare": "plain", "hand": "trim"}.get(variant, "signal")
    if variant == "jemalloc":
        mode = "plain"
    argv = [bench.prog(FRAG[0])] + FRAG[1:] + ["--rounds", str(rounds), "--mode", mode]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = bench.json_lines(bench.run("dear_trim", argv, variant_env(bench, host, variant, log),
                                       timeout=900).stdout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"rss": statistics.median(r["rss"] for r in lines[2:]),
           "stall_us": max(r.get("wait_max_us", 0) for r in lines[1:]),
           "process_cpu_us_per_round": cpu_s * 1e6 / rounds}
    hand = [r for r in lines if r.get("cleanup_us")]
    if hand:
        out["hand_cpu_us"] = statistics.mean(r["cleanup_cpu_us"] for r in hand)
    recs = [r for r in bench.read_log(log) if r.get("event") == "round"]
    if recs:
        out["cpu_us"] = statistics.mean(r["cleanup_cpu_us"] for r in recs)
        trims = [r for r in recs if r.get("trim_holds")]
        out["calls"] = statistics.mean(r["trim_calls"] for r in trims) if trims else 0
        released = sum(r.get("trim_released_bytes", 0) + r.get("trim_steps_released_bytes", 0)
                       for r in recs)
        out["cpu_us_per_mib"] = (sum(r["cleanup_cpu_us"] for r in recs) / (released / bench.MIB)
                                 if released > bench.MIB else float("nan"))
        out["hold_max_us"] = max((r.get("trim_hold_max_us", 0) for r in recs), default=0)
        out["skips"] = sorted({r["trim_skipped"] for r in recs if r.get("trim_skipped")})
        out["path"] = next((r.get("page_release") for r in bench.read_log(log)
                            if r.get("event") == "start"), None)
    return out


def hand_calls_per_round(bench, rounds):
    """madvise calls the program's own malloc_trim(0) makes a round: strace's count of a hand run
    less that of a bare one (glibc frees a non-main heap's top with madvise too)."""
    if not shutil.which("strace"):
        return None
    counts = {}
    for mode in ("trim", "plain"):
        argv = [bench.prog(FRAG[0])] + FRAG[1:] + ["--rounds", str(rounds), "--mode", mode]
        with tempfile.NamedTemporaryFile(prefix="roundtrim-strace.", suffix=".txt") as f:
            bench.run("dear_trim", ["strace", "-f", "-c", "-e", "trace=madvise", "-o", f.name]
                      + argv, timeout=900)
            text = open(f.name).read()
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?madvise\s*$", text, re.M)
        counts[mode] = int(m.group(1)) if m else 0
    return max(0, counts["trim"] - counts["plain"]) / rounds


def section(bench, cfg, tmpdir):
    reps, rounds = cfg.get("dear_reps", 3), cfg.get("dear_rounds", 8)
    variants = GLIBC_VARIANTS + (JE_VARIANTS if bench.have_jemalloc() else [])
    runs = {c: {f"{h}|{v}": [] for h, v in variants} for c in CONDITIONS}
    n = 0
    for rep in range(reps):
        for cond in (CONDITIONS if rep % 2 == 0 else CONDITIONS[::-1]):
            with bench_trim.Hogs(bench, cond == "loaded"):
                order = variants if rep % 2 == 0 else variants[::-1]
                for host, v in order:
                    n += 1
                    runs[cond][f"{host}|{v}"].append(one_run(bench, host, v, rounds, tmpdir, n))
    return {"reps": reps, "rounds": rounds, "runs": runs, "call_cost": release_call_cost(bench),
            "hand_calls_per_round": hand_calls_per_round(bench, rounds), "limit_ms": LIMIT_MS,
            "emulated_call_us": CALL_US, "emulated_range_us": RANGE_US}


def med(runs, key):
    xs = [r[key] for r in runs if key in r and r[key] == r[key]]
    return statistics.median(xs) if xs else float("nan")


def call_cost_text(cost):
    here, dear = cost["this host"], cost["dear"]
    batch = (lambda c: f"process_madvise {c['batch_call_us']:.0f} us a call of 1,024 ranges "
             f"({c['batch_range_us']:.2f} us a range)" if c.get("batch_call_us") is not None
             else "no process_madvise on oneself (kernel before 6.13)")
    return (f"this host: madvise {here['madvise_call_us']:.1f} us a call, {batch(here)}; "
            f"emulated dear host: madvise {dear['madvise_call_us']:.1f} us a call, {batch(dear)}")


def section_md(bench, res):
    mib = bench.MIB
    cost = res["call_cost"]
    extra_us = cost["dear"]["madvise_call_us"] - cost["this host"]["madvise_call_us"]
    calls = res.get("hand_calls_per_round")
    out = ["## 13. Trim where a release call is dear", "",
           f"One release call costs, measured by `release_call_cost`: {call_cost_text(cost)}. "
           "glibc's `malloc_trim(0)` makes one madvise call per free chunk"
           + (f" ({calls:,.0f} a round on this workload, counted with strace)" if calls else "")
           + "; roundtrim's trim gives the same pages back in batches. The dear host is "
           f"emulated: each of roundtrim's release calls spins {res['emulated_call_us']} us "
           f"(+{res['emulated_range_us']} us a range) first; the hand trim's calls are inside "
           "libc, out of a preload's reach, so its CPU on the dear host is its CPU here plus "
           "its calls times the difference in one call's cost. Medians of "
           f"{res['reps']} runs of {res['rounds']} rounds each, interleaved; RSS is the "
           "program's own end-of-round reading after its 1 s idle, from round 3 on; stall: the "
           "heartbeat thread's longest malloc or free.", "",
           "Goals: roundtrim within 5% of hand's RSS, quiet and loaded; its cleanup CPU at most "
           "a quarter of the hand trim's on the dear host; the longest stall at most the limit "
           f"+ 20% ({res['limit_ms'] * 1.2:.0f} ms); never above bare.", ""]
    rows = []
    for cond in CONDITIONS:
        r = res["runs"][cond]
        hand_runs, bare_runs = r["this host|hand"], r["this host|bare"]
        hand_rss, bare_rss = med(hand_runs, "rss"), med(bare_runs, "rss")
        hand_cpu = med(hand_runs, "hand_cpu_us")
        hand_dear = hand_cpu + (calls or 0) * extra_us
        for key, runs in r.items():
            host, v = key.split("|")
            if not runs:
                continue
            rss = med(runs, "rss")
            if v == "hand":
                cpu = f"{hand_cpu / 1000:.1f} here, {hand_dear / 1000:.1f} dear" if calls \
                    else f"{hand_cpu / 1000:.1f}"
            elif "roundtrim" in v:
                c = med(runs, "cpu_us")
                ref = hand_dear if host == "dear" else hand_cpu
                cpu = f"{c / 1000:.1f} ({c / ref:.0%} of hand)" if v.startswith("roundtrim") \
                    else f"{c / 1000:.1f}"
            else:
                cpu = "-"
            rows.append([cond, host, v, f"{rss / mib:.1f}",
                         bench.pct(rss / hand_rss) if not v.startswith("jemalloc") else "-",
                         bench.pct(rss / bare_rss), cpu,
                         f"{med(runs, 'calls'):,.0f}" if "roundtrim" in v and
                         not v.startswith("jemalloc") else "-",
                         f"{med(runs, 'cpu_us_per_mib') / 1000:.2f}" if "roundtrim" in v
                         else "-",
                         f"{med(runs, 'stall_us') / 1000:.1f}",
                         f"{med(runs, 'process_cpu_us_per_round') / 1000:.0f}",
                         ", ".join(sorted({s for x in runs for s in x.get("skips", [])})) or "-"])
    out += [bench.md_table(["machine", "host", "variant", "end-of-round RSS MiB", "vs hand",
                            "vs bare", "cleanup CPU ms/round", "release calls/round",
                            "cleanup CPU ms per MiB", "longest stall ms",
                            "process CPU ms/round", "trim skips"], rows), ""]
    return out


if __name__ == "__main__":
    bench_trim.standalone(section, section_md, "dear", "roundtrim-dear.")
