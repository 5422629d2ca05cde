#!/usr/bin/env python3
"""Measures how long glibc's ways of giving free heap back hold application threads up
(docs/bench/pause/FINDINGS.md): runs build/tests/bench_cleanup over the candidates, 3 times each
(interleaved, the order reversed every other repetition), and writes one JSON line per run.

    tests/bench/pause_research.py OUT.jsonl [GROUP ...]     # runs (all groups by default)
    tests/bench/pause_research.py --table OUT.jsonl         # markdown tables of a results file
    tests/bench/pause_research.py --fit OUT.jsonl           # the pause model fitted to the slices

Groups: pad, slices, slices-more, release, release-large, churn, churn-large, arenas,
threshold, round."""

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROG = os.path.join(ROOT, "build", "tests", "bench_cleanup")
LIB = os.path.join(ROOT, "build", "libroundtrim.so")
REPS = 3
HEAPS = (256, 1024)


def cfg(group, variant, args, env=None, **extra):
    return dict(group=group, variant=variant, args=[str(a) for a in args], env=env or {}, **extra)


def configs(group):
    out = []
    if group == "pad":
        for h in HEAPS + (4096,):
            out.append(cfg(group, "malloc_trim(0)", ["--heap-mib", h, "--threads", 4]))
            if h != 4096:
                out.append(cfg(group, "malloc_trim(1 GiB pad)",
                               ["--heap-mib", h, "--threads", 4, "--trim-pad-mib", 1024]))
                out.append(cfg(group, "malloc_trim(0), 1 arena",
                               ["--heap-mib", h, "--threads", 4], {"MALLOC_ARENA_MAX": "1"}))
                out.append(cfg(group, "malloc_trim(1 GiB pad), 1 arena",
                               ["--heap-mib", h, "--threads", 4, "--trim-pad-mib", 1024],
                               {"MALLOC_ARENA_MAX": "1"}))
    elif group == "slices":
        for h in HEAPS:
            for s in (1, 4, 8, 16):
                out.append(cfg(group, f"{s} slices", ["--heap-mib", h, "--threads", 4, "--slices",
                                                      s, "--quiet-ms", 100]))
            out.append(cfg(group, "8 slices, 1 arena", ["--heap-mib", h, "--threads", 4,
                                                        "--slices", 8, "--quiet-ms", 100],
                           {"MALLOC_ARENA_MAX": "1"}))
            out.append(cfg(group, "1 slice, 1 arena", ["--heap-mib", h, "--threads", 4,
                                                       "--slices", 1, "--quiet-ms", 100],
                           {"MALLOC_ARENA_MAX": "1"}))
    elif group == "release":
        for h in HEAPS:
            for n in (0, 1, 4):
                out.append(cfg(group, f"blocks <=64K, N={n}",
                               ["--heap-mib", h, "--threads", 4, "--release-pages", n]))
            for n in (0, 4, 16, 64):
                out.append(cfg(group, f"blocks <=1M, N={n}",
                               ["--heap-mib", h, "--threads", 4, "--release-pages", n,
                                "--block-max-kib", 1024]))
    elif group == "churn":
        for t in (1, 2):
            for n in (0, 4, 16, 64):
                out.append(cfg(group, f"N={n}", ["--mode", "churn", "--threads", t,
                                                 "--churn-ops", 30000, "--release-pages", n]))
            for thr in ("131072", "1048576"):
                out.append(cfg(group, f"MALLOC_MMAP_THRESHOLD_={thr}",
                               ["--mode", "churn", "--threads", t, "--churn-ops", 30000],
                               {"MALLOC_MMAP_THRESHOLD_": thr}))
    elif group == "churn-large":
        for t in (1, 2):
            for n in (0, 64, 256):
                out.append(cfg(group, f"N={n}", ["--mode", "churn", "--threads", t,
                                                 "--churn-ops", 4000, "--churn-max-kib", 2048,
                                                 "--release-pages", n]))
            out.append(cfg(group, "MALLOC_MMAP_THRESHOLD_=1048576",
                           ["--mode", "churn", "--threads", t, "--churn-ops", 4000,
                            "--churn-max-kib", 2048], {"MALLOC_MMAP_THRESHOLD_": "1048576"}))
    elif group == "release-large":
        for h in HEAPS:
            for n in (0, 64, 256):
                out.append(cfg(group, f"blocks <=2M, N={n}",
                               ["--heap-mib", h, "--threads", 4, "--release-pages", n,
                                "--block-max-kib", 2048]))
    elif group == "slices-more":
        for s in (1, 8, 16):
            out.append(cfg(group, f"{s} slices, 2 arenas",
                           ["--heap-mib", 1024, "--threads", 4, "--slices", s, "--quiet-ms", 100],
                           {"MALLOC_ARENA_MAX": "2"}))
            out.append(cfg(group, f"{s} slices", ["--heap-mib", 4096, "--threads", 4,
                                                  "--slices", s, "--quiet-ms", 100]))
    elif group == "arenas":
        for h in HEAPS:
            for t in (4, 8):
                for a in ("1", "2", "4", "8", None):
                    out.append(cfg(group, f"MALLOC_ARENA_MAX={a or 'unset'}",
                                   ["--heap-mib", h, "--threads", t],
                                   {"MALLOC_ARENA_MAX": a} if a else {}))
    elif group == "threshold":
        for h in HEAPS:
            for b in (64, 2048):
                for thr in (None, "131072", "1048576"):
                    out.append(cfg(group, f"blocks <={b}K, threshold {thr or 'dynamic'}",
                                   ["--heap-mib", h, "--threads", 4, "--block-max-kib", b],
                                   {"MALLOC_MMAP_THRESHOLD_": thr} if thr else {}))
    elif group == "round":
        for h in HEAPS:
            out.append(cfg(group, "roundtrim round (arenas capped at 2)",
                           ["--mode", "round", "--heap-mib", h, "--threads", 4], round=True))
    return out


def run_one(c, tmp):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MALLOC_", "ROUNDTRIM_", "NVFLARE_", "GLIBC_TUNABLES"))}
    env.update(c["env"])
    if c.get("round"):
        log = os.path.join(tmp, "round.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        env.update(LD_PRELOAD=LIB, ROUNDTRIM_LOG=log, NVFLARE_CLIENT_MEMORY_GC_ROUNDS="1")
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    t0 = time.monotonic()
    p = subprocess.run([PROG] + c["args"], env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{c}: exit {p.returncode}: {p.stderr}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res.update(group=c["group"], variant=c["variant"], env=c["env"], argv=c["args"],
               run_s=round(time.monotonic() - t0, 2), loadavg=float(load))
    return res


def run(out_path, groups):
    tmp = os.path.dirname(os.path.abspath(out_path))
    with open(out_path, "a") as out:
        for g in groups:
            cs = configs(g)
            t0 = time.monotonic()
            for rep in range(REPS):
                for c in (cs if rep % 2 == 0 else cs[::-1]):
                    res = run_one(c, tmp)
                    res["rep"] = rep
                    out.write(json.dumps(res) + "\n")
                    out.flush()
            print(f"{g}: {len(cs) * REPS} runs in {time.monotonic() - t0:.0f} s", file=sys.stderr)


MIB = 1024 * 1024


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def table(path):
    rows = [json.loads(line) for line in open(path)]
    groups = []
    for r in rows:
        if r["group"] not in groups:
            groups.append(r["group"])
    for g in groups:
        runs = [r for r in rows if r["group"] == g]
        keys = []
        for r in runs:
            k = (r.get("heap_mib", 0), r["threads"], r["variant"])
            if k not in keys:
                keys.append(k)
        print(f"\n### {g}\n")
        if g.startswith("churn"):
            print("| threads | variant | runs | ns/op | CPU ns/op | sys ns/op | minor faults/op |"
                  " released frees/op | madvise µs per released free | RSS end MiB |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for k in keys:
                rs = [r for r in runs if (r.get("heap_mib", 0), r["threads"], r["variant"]) == k]
                ops = rs[0]["churn_ops"] * rs[0]["threads"]
                rel = med([r["released_frees"] / ops for r in rs])
                us = med([r["release_ns"] / r["released_frees"] / 1e3 for r in rs
                          if r["released_frees"]])
                print(f"| {k[1]} | {k[2]} | {len(rs)} | {med([r['ns_per_op'] for r in rs]):,.0f} |"
                      f" {med([r['cpu_ns_per_op'] for r in rs]):,.0f} |"
                      f" {med([r['sys_ns_per_op'] for r in rs]):,.0f} |"
                      f" {med([r['minflt_per_op'] for r in rs]):.2f} | {rel:.2f} |"
                      f" {us:.1f} | {med([r['rss_end'] / MIB for r in rs]):.1f} |")
            continue
        print("| heap MiB | threads | variant | runs | cleanup ms | longest trim ms |"
              " cleanup CPU ms | largest arena free MiB | longest blocked ms (median / max) |"
              " longest stall ms (max) | quiet blocked ms (max) | RSS before MiB |"
              " RSS after MiB | live MiB | released at free MiB | madvise at free µs/free |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for k in keys:
            rs = [r for r in runs if (r["heap_mib"], r["threads"], r["variant"]) == k]
            cl = med([(r["record_us"] if r["record_us"] >= 0 else r["cleanup_us"]) / 1e3
                      for r in rs])
            rel = med([r["released_bytes"] / MIB for r in rs])
            us = med([r["release_ns"] / r["released_frees"] / 1e3 for r in rs
                      if r["released_frees"]])
            print(f"| {k[0]} | {k[1]} | {k[2]} | {len(rs)} | {cl:,.1f} |"
                  f" {med([r['cleanup_max_us'] / 1e3 for r in rs]):,.1f} |"
                  f" {med([r['cleanup_cpu_us'] / 1e3 for r in rs]):,.1f} |"
                  f" {med([max(r['slice_arena_free_max_bytes']) / MIB for r in rs]):,.1f} |"
                  f" {med([r['blocked_cleanup_us'] / 1e3 for r in rs]):,.1f} /"
                  f" {max(r['blocked_cleanup_us'] / 1e3 for r in rs):,.1f} |"
                  f" {max(r['stall_cleanup_us'] / 1e3 for r in rs):,.1f} |"
                  f" {max(r['blocked_quiet_us'] / 1e3 for r in rs):,.2f} |"
                  f" {med([r['rss_before'] / MIB for r in rs]):,.1f} |"
                  f" {med([r['rss_after'] / MIB for r in rs]):,.1f} |"
                  f" {med([r['live_bytes'] / MIB for r in rs]):,.1f} | {rel:,.0f} |"
                  f" {us:.1f} |")
        if g.startswith("slices"):
            print("\nPer slice (median of the runs): trim ms / longest blocked ms\n")
            for k in keys:
                rs = [r for r in runs if (r["heap_mib"], r["threads"], r["variant"]) == k]
                n = len(rs[0]["slice_cleanup_us"])
                if n == 1:
                    continue
                cells = [f"{med([r['slice_cleanup_us'][i] for r in rs]) / 1e3:.1f}/"
                         f"{med([r['slice_blocked_us'][i] for r in rs]) / 1e3:.1f}"
                         for i in range(n)]
                print(f"- {k[0]} MiB, {k[2]}: " + ", ".join(cells))


def least_squares(xs, ys):
    """Coefficients c minimising sum (x . c - y)^2 (normal equations, Gaussian elimination)."""
    n = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(n)] for i in range(n)]
    b = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            f = a[j][i] / a[i][i]
            a[j] = [aj - f * ai for aj, ai in zip(a[j], a[i])]
            b[j] -= f * b[i]
    c = [0.0] * n
    for i in reversed(range(n)):
        c[i] = (b[i] - sum(a[i][k] * c[k] for k in range(i + 1, n))) / a[i][i]
    return c


def fit(path):
    """The longest blocked call of each slice's trim against the largest arena's free heap: the
    part freed since the last trim (U, still resident) and the part an earlier trim gave back
    (R, walked and madvised again): blocked ~ alpha U + beta R. And, for single trims, the
    longest blocked call per MiB free in the largest arena."""
    rows = [json.loads(line) for line in open(path)]
    sliced = [r for r in rows if r["mode"] == "trim" and r["slices"] > 1]
    for arenas in sorted({r["env"].get("MALLOC_ARENA_MAX", "unset") for r in sliced}):
        xs, ys = [], []
        for r in sliced:
            if r["env"].get("MALLOC_ARENA_MAX", "unset") != arenas:
                continue
            prev = 0
            for free, blocked in zip(r["slice_arena_free_max_bytes"], r["slice_blocked_us"]):
                xs.append([(free - prev) / MIB, prev / MIB])
                ys.append(blocked / 1e3)
                prev = free
        alpha, beta = least_squares(xs, ys)
        res = sorted(abs(alpha * x[0] + beta * x[1] - y) for x, y in zip(xs, ys))
        print(f"MALLOC_ARENA_MAX={arenas}: {len(ys)} slice trims: alpha {alpha:.3f} ms/MiB, "
              f"beta {beta:.4f} ms/MiB, |residual| median {med(res):.2f} ms, max {res[-1]:.1f} ms")
    single = sorted(r["blocked_cleanup_us"] / 1e3 / (r["arena_free_max_bytes"] / MIB)
                    for r in rows if r["mode"] != "churn" and r["slices"] == 1 and r["release_pages"] == 0
                    and r["mode"] in ("trim", "round") and r["arena_free_max_bytes"] > 8 * MIB)
    print(f"single trims: {len(single)} runs: longest blocked per MiB free of the largest arena: "
          f"median {med(single):.3f}, p90 {single[int(0.9 * len(single))]:.3f}, "
          f"max {single[-1]:.3f} ms/MiB")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in ("--table", "--fit"):
        (table if sys.argv[1] == "--table" else fit)(sys.argv[2])
        return
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    groups = sys.argv[2:] or ["pad", "slices", "slices-more", "release", "release-large", "churn",
                              "churn-large", "arenas", "threshold", "round"]
    run(sys.argv[1], groups)


if __name__ == "__main__":
    main()
