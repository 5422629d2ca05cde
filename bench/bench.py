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
import concurrent.futures
import datetime
import json
import math
import mmap
import os
import platform
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The sections in files of their own beside this one, and the report's package (its fit and its
# reading of sites records are what the benchmarks measure against).
for _folder in (os.path.dirname(os.path.abspath(__file__)), os.path.join(ROOT, "scripts")):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)
import bench_policy  # noqa: E402  (section 9)
import bench_trim  # noqa: E402  (section 11)
import bench_dear_trim  # noqa: E402  (section 13)
from roundtrim_report import sites as roundtrim_sites  # noqa: E402
from roundtrim_report import stats as roundtrim_stats  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BUILD = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
LIB = os.path.join(BUILD, "libroundtrim.so")
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"  # what NVFlare's start script sets
FAKECUDA_DIR = os.path.join(BUILD, "fakecuda")
PY = "/usr/bin/python3"
PY_CLIENT = os.path.join(ROOT, "tests", "python", "fl_client.py")
PY_HOOK = "fl_task:train_round"
MIB = 1024 * 1024
SECTIONS = ["overhead", "cuda", "native", "python", "cleanup", "sites", "startup", "programs",
            "diagnosis", "policy", "defaults", "trim", "dear_trim"]


def prog(name):
    return os.path.join(BUILD, "tests", name)


# --------------------------------------------------------------------------------------------
# Running things, and remembering exactly what ran


class Commands:
    """The exact command lines of each section, in the order they first ran, with counts."""

    def __init__(self):
        self.by_section = {}

    def add(self, section, env_delta, argv, emptied=False):
        text = render_command(env_delta, argv, emptied)
        entries = self.by_section.setdefault(section, {})
        entries[text] = entries.get(text, 0) + 1


COMMANDS = Commands()


TMP_ROOT = None  # the run's temporary folder, shown as /tmp/roundtrim-bench


def short_path(p):
    """Paths as a reader types them from the repository root (the build folder as build/)."""
    p = str(p)
    if TMP_ROOT and p.startswith(TMP_ROOT + os.sep):
        return os.path.join("/tmp/roundtrim-bench", os.path.relpath(p, TMP_ROOT))
    if p.startswith(BUILD + os.sep):
        return os.path.join("build", os.path.relpath(p, BUILD))
    if p.startswith(ROOT + os.sep):
        return os.path.relpath(p, ROOT)
    return p


def render_command(env_delta, argv, emptied=False):
    """The command line as a reader types it; emptied: `env -i` first, so that only env_delta is
    set."""
    parts = ["env", "-i"] if emptied else []
    for k, v in env_delta.items():
        v = " ".join(short_path(x) for x in str(v).split(" "))
        parts.append(f"{k}={shlex.quote(v)}")
    parts += [shlex.quote(short_path(a)) for a in argv]
    return " ".join(parts)


def clean_env(delta):
    """The caller's environment without anything that changes malloc, plus delta."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_", "MALLOC_"))
           and k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "LD_LIBRARY_PATH")}
    env.update({k: str(v) for k, v in delta.items()})
    return env


def run(section, argv, env_delta=None, timeout=600, record=True):
    env_delta = dict(env_delta or {})
    if record:
        COMMANDS.add(section, env_delta, argv)
    proc = subprocess.run([str(a) for a in argv], env=clean_env(env_delta), capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{render_command(env_delta, argv)} exited {proc.returncode}: "
                           f"{proc.stderr.strip()[-800:]}")
    return proc


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def pct(ratio):
    if ratio is None or math.isnan(ratio):
        return "n/a"
    return f"{(ratio - 1) * 100:+.1f}%"


def have_jemalloc():
    return os.path.exists(JEMALLOC)


def allocator_env(allocator, shim, extra=None):
    """LD_PRELOAD for (glibc|jemalloc) x (bare|shim): the shim always comes first."""
    preload = []
    if shim:
        preload.append(LIB)
    if allocator == "jemalloc":
        preload.append(JEMALLOC)
    env = {"LD_PRELOAD": " ".join(preload)} if preload else {}
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------------------------
# The machine


def read_first(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def dpkg_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                             text=True, timeout=20)
        return out.stdout.strip() or "not installed"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def tool_version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not available"


def memory_probe():
    """What releasing and re-faulting memory costs on this machine: glibc's trim is a series of
    madvise(MADV_DONTNEED) calls over the free parts of the heap, so its cost follows these."""
    size, piece = 64 * MIB, 96 * 1024
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    pages = size // mmap.PAGESIZE
    page = b"\1" * mmap.PAGESIZE
    t0 = time.perf_counter()
    for off in range(0, size, mmap.PAGESIZE):
        m[off:off + mmap.PAGESIZE] = page
    fault_us = (time.perf_counter() - t0) / pages * 1e6
    t0 = time.perf_counter()
    for off in range(0, size - piece + 1, piece):
        m.madvise(mmap.MADV_DONTNEED, off, piece)
    madvise_us = (time.perf_counter() - t0) / (size // piece * piece // mmap.PAGESIZE) * 1e6
    m.close()
    return {"first_touch_us_per_page": fault_us, "madvise_96k_us_per_page": madvise_us}


def machine():
    cpu = "unknown"
    for line in read_first("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in read_first("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    info = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem_kib / 1024 / 1024,
        "kernel": platform.release(),
        "glibc": f"{os.confstr('CS_GNU_LIBC_VERSION')} (Debian libc6 {dpkg_version('libc6')})",
        "jemalloc": dpkg_version("libjemalloc2") if have_jemalloc() else "not installed",
        "compiler": tool_version([os.environ.get("CC", "cc"), "--version"]),
        "valgrind": tool_version(["valgrind", "--version"]) if shutil.which("valgrind")
        else "not installed",
        "python": platform.python_version(),
        "thp": read_first("/sys/kernel/mm/transparent_hugepage/enabled", "unknown"),
        "git": git + (" (with uncommitted changes)" if dirty else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_start": read_first("/proc/loadavg"),
    }
    try:
        info.update(memory_probe())
    except (OSError, ValueError, AttributeError) as e:
        info["memory_probe_error"] = str(e)
    if os.path.exists(prog("release_call_cost")):
        calls = json_lines(subprocess.run([prog("release_call_cost")], capture_output=True,
                                          text=True).stdout)
        if calls:
            info["release_call"] = calls[-1]
    return info


# --------------------------------------------------------------------------------------------
# 1. Hot-path overhead


def callgrind_total(out_file):
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {out_file}")


ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*?)(?:\s+\[(.*)\])?\s*$")


def callgrind_functions(out_file):
    """{'file:function': Ir} from callgrind_annotate (exclusive counts)."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", out_file],
                         capture_output=True, text=True, timeout=120).stdout
    funcs, started = {}, False
    for line in out.splitlines():
        if "file:function" in line:
            started = True
            continue
        if not started:
            continue
        m = ANNOTATE_LINE.match(line)
        if m:
            name = m.group(2).replace(ROOT + "/", "")
            while "/./" in name or name.startswith("./"):
                name = re.sub(r"(^|/)\./", r"\1", name)
            obj = os.path.basename(m.group(3)) if m.group(3) else ""
            key = f"{name} [{obj}]" if obj else name
            funcs[key] = funcs.get(key, 0) + int(m.group(1).replace(",", ""))
    return funcs


def run_env(env_delta, emptied):
    """The environment of a run: the caller's (less what changes malloc) plus env_delta, or, for
    an emptied environment, env_delta alone."""
    return dict(env_delta) if emptied else clean_env(env_delta)


def callgrind_run(section, argv, env_delta, tmpdir, tag, emptied=False):
    out = os.path.join(tmpdir, f"cg.{tag}")
    vg = [shutil.which("valgrind") or "valgrind", "--tool=callgrind",
          f"--callgrind-out-file={out}"]
    COMMANDS.add(section, env_delta, ["valgrind", "--tool=callgrind", "--callgrind-out-file=OUT"]
                 + argv, emptied)
    proc = subprocess.run(vg + [str(a) for a in argv], env=run_env(env_delta, emptied),
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind {tag} failed: {proc.stderr.strip()[-800:]}")
    return out


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


# --------------------------------------------------------------------------------------------
# 2. CUDA interposition cost


def section_cuda(cfg, tmpdir):
    bench, driver = prog("cuda_bench"), os.path.join(FAKECUDA_DIR, "libcuda.so.1")
    if not (os.path.exists(bench) and os.path.exists(driver)):
        return {"skipped": f"{short_path(bench)} or {short_path(driver)} is not built"}
    base = {"LD_LIBRARY_PATH": FAKECUDA_DIR}
    variants = [("bare", dict(base)), ("shim", dict(base, LD_PRELOAD=LIB))]
    ns = {"bare": [], "shim": []}
    for rep in range(cfg["cuda_reps"]):
        for name, env in (variants if rep % 2 == 0 else variants[::-1]):
            out = run("cuda", [bench, cfg["cuda_pairs"]], env).stdout
            m = re.search(r"ns_per_pair=([\d.]+) preloaded=(\d)", out)
            if not m or int(m.group(2)) != (name == "shim"):
                raise RuntimeError(f"unexpected cuda_bench output: {out!r}")
            ns[name].append(float(m.group(1)))
    ratios = [s / b for s, b in zip(ns["shim"], ns["bare"])]
    result = {"pairs": cfg["cuda_pairs"], "reps": cfg["cuda_reps"], "bare_ns": median(ns["bare"]),
              "shim_ns": median(ns["shim"]), "ratio": median(ratios),
              "delta_ns": median([s - b for s, b in zip(ns["shim"], ns["bare"])])}
    if shutil.which("valgrind"):
        n1, n2 = cfg["cuda_cg_pairs"]
        ir = {}
        for name, env in variants:
            f1 = callgrind_run("cuda", [bench, n1], env, tmpdir, f"cuda.{name}.{n1}")
            f2 = callgrind_run("cuda", [bench, n2], env, tmpdir, f"cuda.{name}.{n2}")
            ir[name] = (callgrind_total(f2) - callgrind_total(f1)) / (n2 - n1)
        result.update(bare_ir=ir["bare"], shim_ir=ir["shim"])
    return result


# --------------------------------------------------------------------------------------------
# 3. Effectiveness: RSS per round


def run_rounds(section, argv, env_delta, sample_s=0.005, timeout=900):
    """Runs a program that prints one JSON line per round with its end-of-round "rss"; samples
    the process's RSS meanwhile (every sample_s) for the peak of each round."""
    COMMANDS.add(section, env_delta, argv)
    proc = subprocess.Popen([str(a) for a in argv], env=clean_env(env_delta), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, err = [], []

    def reader():
        for line in proc.stdout:
            lines.append((time.monotonic(), line))

    def err_reader():
        err.append(proc.stderr.read())

    threads = [threading.Thread(target=reader), threading.Thread(target=err_reader)]
    for t in threads:
        t.start()
    samples, page = [], os.sysconf("SC_PAGE_SIZE")
    statm = f"/proc/{proc.pid}/statm"
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with open(statm) as f:
                rss = int(f.read().split()[1]) * page
            samples.append((time.monotonic(), rss))
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(sample_s)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for t in threads:
        t.join()
    rounds, prev_t = [], 0.0
    for t, line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if "round" not in rec or "rss" not in rec:
            continue
        window = [rss for (ts, rss) in samples if prev_t < ts <= t]
        rec["peak"] = max(window + [rec["rss"]])
        rounds.append(rec)
        prev_t = t
    # A failure after the last round is reported with the figures, not in their place.
    return rounds, proc.returncode, "".join(err).strip()[-400:]


def least_squares(xs, ys):
    """(slope, standard error) of the least-squares line of ys over xs (roundtrim_report.stats,
    the report's fit)."""
    slope = roundtrim_stats.slope(xs, ys)
    if slope is None:
        raise ZeroDivisionError(f"no slope over {len(xs)} rounds: it needs 2 distinct rounds")
    return slope, roundtrim_stats.slope_error(xs, ys, slope)


def summarize_rounds(rounds, skip):
    """Steady state: the rounds after the first `skip` (the heap is still growing then)."""
    steady = rounds[skip:]
    xs = [r["round"] for r in steady]
    end = [r["rss"] / MIB for r in steady]
    slope, se = least_squares(xs, end)
    return {"rounds": len(rounds), "steady_from": steady[0]["round"],
            "median_mib": median(end), "last_mib": rounds[-1]["rss"] / MIB,
            "peak_median_mib": median([r["peak"] / MIB for r in steady]),
            "peak_max_mib": max(r["peak"] / MIB for r in rounds),
            "slope_mib": slope, "slope_ci_mib": 2.1 * se,
            "series": [r["rss"] / MIB for r in rounds],
            "peaks": [r["peak"] / MIB for r in rounds]}


def read_log(path):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    recs.append(json.loads(line))
    return recs


def effectiveness(section, variants, base_argv, cfg, tmpdir):
    results = []
    for name, kind, env, extra_argv in variants:
        env = dict(env)
        log = None
        if kind == "shim":
            log = os.path.join(tmpdir, f"{section}.{len(results)}.jsonl")
            env["ROUNDTRIM_LOG"] = log
        rounds, status, err = run_rounds(section, base_argv + extra_argv, env)
        if len(rounds) < cfg["rounds"]:
            raise RuntimeError(f"{name}: {len(rounds)} rounds printed, {cfg['rounds']} expected "
                               f"(exit status {status}): {err}")
        summary = summarize_rounds(rounds, cfg["rounds"] // 3)
        if status != 0:
            summary["exit_status"] = status
            summary["stderr_tail"] = err
        summary.update(name=name, kind=kind, command=render_command(env, base_argv + extra_argv))
        own = [r.get("cleanup_us", 0) for r in rounds if r.get("cleanup_us")]
        if own:
            summary["cleanup_ms"] = median(own) / 1000
        if log:
            recs = [r for r in read_log(log) if r.get("event") == "round"]
            summary["records"] = len(recs)
            summary["cleanups"] = sum(1 for r in recs if r.get("cleanup"))
            if recs:
                summary["cleanup_ms"] = median([r.get("cleanup_us", 0) for r in recs]) / 1000
                summary["trim_ms"] = median([r.get("trim_us", 0) or 0 for r in recs]) / 1000
        results.append(summary)
    return results


def native_variants():
    shim = {"LD_PRELOAD": LIB}
    v = [("bare", "bare", {}, ["--mode", "plain"]),
         ("MALLOC_ARENA_MAX=2", "bare", {"MALLOC_ARENA_MAX": "2"}, ["--mode", "plain"])]
    if have_jemalloc():
        v.append(("jemalloc, decay 5 s", "bare",
                  {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": JEMALLOC_CONF}, ["--mode", "plain"]))
    v += [("program calls malloc_trim(0)", "manual", {}, ["--mode", "trim"]),
          ("roundtrim defaults", "shim", shim, ["--mode", "signal"]),
          ("roundtrim, ROUNDTRIM_MMAP_THRESHOLD=131072", "shim",
           dict(shim, ROUNDTRIM_MMAP_THRESHOLD="131072"), ["--mode", "signal"]),
          ("roundtrim, ROUNDTRIM_ARENA_MAX=0", "shim",
           dict(shim, ROUNDTRIM_ARENA_MAX="0"), ["--mode", "signal"])]
    if have_jemalloc():
        v.append(("roundtrim + jemalloc (purge)", "shim",
                  {"LD_PRELOAD": f"{LIB} {JEMALLOC}", "MALLOC_CONF": JEMALLOC_CONF},
                  ["--mode", "signal"]))
    return v


def section_native(cfg, tmpdir):
    argv = [prog("fl_workload"), "--rounds", cfg["rounds"], "--threads", 4, "--model-mib",
            cfg["native_model_mib"], "--pause-ms", cfg["native_pause_ms"]]
    return {"argv": render_command({}, argv),
            "variants": effectiveness("native", native_variants(), argv, cfg, tmpdir)}


def python_variants():
    shim = {"LD_PRELOAD": LIB, "ROUNDTRIM_PY_HOOK": PY_HOOK}
    v = [("bare", "bare", {}, ["--mode", "plain"]),
         ("MALLOC_ARENA_MAX=2", "bare", {"MALLOC_ARENA_MAX": "2"}, ["--mode", "plain"])]
    if have_jemalloc():
        v.append(("jemalloc, decay 5 s", "bare",
                  {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": JEMALLOC_CONF}, ["--mode", "plain"]))
    v += [("program calls gc.collect() + malloc_trim(0)", "manual", {}, ["--mode", "manual"]),
          ("roundtrim defaults", "shim", shim, ["--mode", "plain"]),
          ("roundtrim, ROUNDTRIM_MMAP_THRESHOLD=131072", "shim",
           dict(shim, ROUNDTRIM_MMAP_THRESHOLD="131072"), ["--mode", "plain"])]
    return v


def section_python(cfg, tmpdir):
    if not os.path.exists(PY_CLIENT):
        return {"skipped": f"{short_path(PY_CLIENT)} is not there yet"}
    probe = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        return {"skipped": "torch cannot be imported by /usr/bin/python3 (apt-get install "
                           "python3-torch)"}
    argv = [PY, PY_CLIENT, "--rounds", cfg["rounds"], "--width", cfg["py_width"], "--wait",
            cfg["py_wait"]]
    return {"torch": probe.stdout.strip(), "argv": render_command({}, argv),
            "variants": effectiveness("python", python_variants(), argv, cfg, tmpdir)}


# --------------------------------------------------------------------------------------------
# 4. Cleanup cost and stalls


def cleanup_once(mode, heap_mib, threads, tmpdir, allocator="glibc"):
    argv = [prog("bench_cleanup"), "--mode", "round" if mode.startswith("round") else mode,
            "--heap-mib", heap_mib, "--threads", threads]
    env = {}
    if mode.startswith("round"):
        log = os.path.join(tmpdir, "cleanup.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        env = allocator_env(allocator, True, {"ROUNDTRIM_LOG": log})
    elif allocator == "jemalloc":
        env = allocator_env(allocator, False)
    t0 = time.monotonic()
    res = json_lines(run("cleanup", argv, env, timeout=900).stdout)[0]
    res["run_s"] = time.monotonic() - t0
    res["variant"] = mode
    # The cleanup itself: malloc_trim's duration, or the trim/purge time of roundtrim's record.
    res["cleanup_ms"] = (res["record_us"] if res["record_us"] >= 0 else res["cleanup_us"]) / 1000
    res["wall_ms"] = res["cleanup_us"] / 1000
    res["one_arena_ms"] = (res["cleanup_ms"] * res["arena_free_max_bytes"] / res["free_bytes"]
                           if res["free_bytes"] else float("nan"))
    return res


def section_cleanup(cfg, tmpdir):
    modes = ["trim", "round"]
    avail_mib = 0
    for line in read_first("/proc/meminfo").splitlines():
        if line.startswith("MemAvailable:"):
            avail_mib = int(line.split()[1]) // 1024
    limit_mib = min(cfg["cleanup_max_mib"], avail_mib // 3)
    budget_end = time.monotonic() + cfg["cleanup_budget_s"]
    by_size, sizes = [], []
    size, spent_per_mib = cfg["cleanup_sizes"][0], 0.0
    # Sizes double while the machine has the memory and the projected time fits the budget.
    while size <= limit_mib:
        projected = spent_per_mib * size * len(modes) * cfg["cleanup_reps"]
        if sizes and time.monotonic() + projected > budget_end - cfg["cleanup_thread_budget_s"]:
            break
        t0 = time.monotonic()
        runs = []
        for rep in range(cfg["cleanup_reps"]):
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                runs.append(cleanup_once(mode, size, cfg["cleanup_threads"], tmpdir))
        by_size += runs
        sizes.append(size)
        spent_per_mib = (time.monotonic() - t0) / size / len(modes) / cfg["cleanup_reps"]
        size *= 4 if size < cfg["cleanup_sizes"][-1] else 2
    by_threads = []
    for rep in range(cfg["cleanup_reps"]):
        for threads in cfg["cleanup_thread_counts"]:
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                by_threads.append(cleanup_once(mode, cfg["cleanup_thread_mib"], threads, tmpdir))
    jemalloc = []
    if have_jemalloc():
        for rep in range(cfg["cleanup_reps"]):
            jemalloc.append(cleanup_once("round (jemalloc purge)", cfg["cleanup_thread_mib"],
                                         cfg["cleanup_threads"], tmpdir, "jemalloc"))
    return {"sizes": sizes, "limit_mib": limit_mib, "by_size": by_size, "by_threads": by_threads,
            "jemalloc": jemalloc, "threads": cfg["cleanup_threads"],
            "thread_mib": cfg["cleanup_thread_mib"], "reps": cfg["cleanup_reps"]}


# --------------------------------------------------------------------------------------------
# Plots


def plot_effectiveness(section, result, fig_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.4), sharex=True)
    for v in result["variants"]:
        xs = list(range(1, len(v["series"]) + 1))
        style = {"bare": ":", "manual": "--", "shim": "-"}[v["kind"]]
        width = 2.2 if v["kind"] == "shim" else 1.4
        axes[0].plot(xs, v["series"], style, linewidth=width, label=v["name"])
        axes[1].plot(xs, v["peaks"], style, linewidth=width, label=v["name"])
    axes[0].set_title("RSS at the end of each round")
    axes[1].set_title("peak RSS within each round (5 ms samples)")
    for ax in axes:
        ax.set_xlabel("round")
        ax.set_ylabel("MiB")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    title = {"native": "native FL-like workload (tests/programs/fl_workload)",
             "python": "PyTorch FL-like client (tests/python/fl_client.py)"}[section]
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path = os.path.join(fig_dir, f"effectiveness-{section}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_cleanup(result, fig_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, marker in (("trim", "o"), ("round", "s")):
        rows = [r for r in result["by_size"] if r["variant"] == mode]
        sizes = sorted({r["heap_mib"] for r in rows})
        label = {"trim": "malloc_trim(0) on the program's thread",
                 "round": "roundtrim round (worker thread)"}[mode]
        axes[0].plot(sizes, [median([r["cleanup_ms"] for r in rows if r["heap_mib"] == s])
                             for s in sizes], marker=marker, label=label + ": cleanup")
        axes[0].plot(sizes, [max([r["blocked_cleanup_us"] / 1000 for r in rows
                                  if r["heap_mib"] == s]) for s in sizes],
                     marker=marker, linestyle=":", label=label + ": longest malloc block")
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("heap MiB (a quarter of it live)")
    axes[0].set_ylabel("ms")
    axes[0].set_title(f"against heap size ({result['threads']} threads)")
    axes[0].legend(fontsize=7)
    axes[0].grid(alpha=0.3)
    for mode, marker in (("trim", "o"), ("round", "s")):
        rows = [r for r in result["by_threads"] if r["variant"] == mode]
        ts = sorted({r["threads"] for r in rows})
        axes[1].plot(ts, [median([r["cleanup_ms"] for r in rows if r["threads"] == t]) for t in ts],
                     marker=marker, label=f"{mode}: cleanup")
        axes[1].plot(ts, [max([r["blocked_cleanup_us"] / 1000 for r in rows
                               if r["threads"] == t]) for t in ts],
                     marker=marker, linestyle=":", label=f"{mode}: longest malloc block")
    axes[1].set_xlabel("threads")
    axes[1].set_ylabel("ms")
    axes[1].set_title(f"against threads ({result['thread_mib']} MiB heap)")
    axes[1].legend(fontsize=7)
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(fig_dir, "cleanup-cost.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# The report


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(ok):
    return "met" if ok else "**missed**"


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


def section_md_cuda(res):
    out = ["## 2. CUDA interposition cost", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    out.append(
        "`tests/programs/cuda_bench.c` against the stand-in driver `build/fakecuda/libcuda.so.1` "
        "(entry points found through `cuGetProcAddress_v2`, as libcudart does): "
        f"{res['pairs']:,} cuMemAlloc_v2 + cuMemFree_v2 pairs, {res['reps']} interleaved "
        "repetitions, medians.")
    out.append("")
    rows = [["wall ns per pair", fmt(res["bare_ns"]), fmt(res["shim_ns"]),
             f"{fmt(res['delta_ns'])} ns ({pct(res['ratio'])})"]]
    if "bare_ir" in res:
        rows.append(["instructions per pair (callgrind)", fmt(res["bare_ir"]),
                     fmt(res["shim_ir"]), fmt(res["shim_ir"] - res["bare_ir"])])
    out.append(md_table(["", "bare", "shim", "added"], rows))
    out += ["", "A real driver call costs microseconds; the shim's share is what is added here.",
            ""]
    return out


def section_md_effectiveness(sec, res, fig):
    title = {"native": "3a. Effectiveness: native FL-like workload",
             "python": "3b. Effectiveness: PyTorch FL-like client"}[sec]
    out = [f"## {title}", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    if sec == "native":
        out.append(
            "`tests/programs/fl_workload.c`: 4 threads each build and free their share of a "
            "model in 4-64 KiB blocks per round, keep a fifth alive into the next round, then "
            "wait (the server's turn). `--mode trim` calls `malloc_trim(0)` itself after each "
            "round; `--mode signal` sends itself `SIGUSR1` like a launcher would (the shim "
            "variants: no code change).")
    else:
        out.append(
            f"`tests/python/fl_client.py` (torch {res.get('torch', '?')}): each round receives "
            "the global model as bytes, trains a few steps, serializes the update, and leaves "
            "one update behind in a reference cycle (automatic gc is off, as in long-running "
            "trainers). `--mode manual` runs `gc.collect()` and `malloc_trim(0)` after each "
            "round (NVFlare's cleanup); the shim variants change no code and end a round at "
            f"every return of `{PY_HOOK}` (`ROUNDTRIM_PY_HOOK`).")
    out.append("")
    vs = res["variants"]
    steady = vs[0]["steady_from"]
    out.append(
        f"RSS at the end of each round (after the wait) over {vs[0]['rounds']} rounds; median, "
        f"peak and slope over rounds {steady}-{vs[0]['rounds']} (the first rounds build the "
        "heap up); slope by least squares with a 95% interval; peak = the highest of 5 ms RSS "
        "samples within the round; cleanup = median time of the cleanup per round (the "
        "program's own, or the shim's record).")
    out.append("")
    manual = next((v for v in vs if v["kind"] == "manual"), None)
    rows = []
    for v in vs:
        vs_manual = pct(v["median_mib"] / manual["median_mib"]) if manual else "n/a"
        clean = fmt(v.get("cleanup_ms"), 1) + " ms" if v.get("cleanup_ms") else "-"
        rows.append([v["name"], fmt(v["median_mib"]), fmt(v["last_mib"]),
                     fmt(v["peak_median_mib"]), f"{v['slope_mib']:+.3f} ± {v['slope_ci_mib']:.3f}",
                     vs_manual, clean])
    out.append(md_table(["variant", "median end-of-round MiB", "last MiB", "median peak MiB",
                         "slope MiB/round", "vs own cleanup", "cleanup"], rows))
    out.append("")
    for v in vs:
        if "exit_status" in v:
            out += [f"**Note:** `{v['name']}` printed all its rounds, then exited with status "
                    f"{v['exit_status']} (stderr: `{v['stderr_tail'].splitlines()[-1] if v['stderr_tail'] else ''}`).", ""]
    if fig:
        out += [f"![RSS per round, {sec}]({fig})", ""]
    out += ["Commands (run from the repository root):", "", "```sh"]
    out += [v["command"] for v in vs]
    out += ["```", ""]
    return out


def section_md_cleanup(res, fig):
    out = ["## 4. Cleanup cost and stalls", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    out.append(
        "`tests/bench/bench_cleanup.c`: T threads build a heap of the given size in 512 B-64 KiB "
        "blocks (touched), keep one block in four and free the rest, so three quarters of the "
        "heap lies free in holes between live blocks. The threads then probe: every 100 µs each "
        "times one `malloc` and one `free` of 2-32 KiB (above glibc's tcache, so the call needs "
        "its arena's lock). After a quiet window (the machine's own noise: 'quiet stall'), "
        "the cleanup runs: **trim** = `malloc_trim(0)` on the program's main thread (what "
        "NVFlare's cleanup does); **round** = `roundtrim_round_end()` with the shim preloaded "
        "(defaults: glibc arenas capped at 2), the time being the `trim_us` of its record "
        "(wall = from the call until the record is in the log, which also includes the "
        "worker's `mallinfo2` and RSS reads). 'one arena' = the cleanup time × the largest "
        "free share of one arena (from `malloc_info`): an estimate of the trim of one arena, "
        "the most a probe should wait. 'longest stall' = the longest `malloc` or `free` of any probe "
        "during the cleanup (worst of the runs); 'longest block' = the same less the time the "
        "probe spent runnable but waiting for a CPU (`/proc/thread-self/schedstat`): on a "
        "loaded 2-core machine a thread released by the lock may wait for a CPU, which is the "
        "machine's doing, not the cleanup's.")
    out.append("")
    if res["sizes"] and res["sizes"][-1] < 4096:
        out.append(
            f"Sizes stop at {res['sizes'][-1]} MiB: the next size did not fit the time budget "
            f"of this section on this machine (or a third of its available memory, "
            f"{res['limit_mib']} MiB).")
        out.append("")

    def table(runs, key):
        groups = {}
        for r in runs:
            groups.setdefault((r[key], r["variant"]), []).append(r)
        rows = []
        for (k, variant), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            rows.append([k, variant, len(rs), fmt(median([r["cleanup_ms"] for r in rs])),
                         fmt(median([r["wall_ms"] for r in rs])),
                         fmt(median([r["rss_before"] / MIB for r in rs])),
                         fmt(median([r["rss_after"] / MIB for r in rs])),
                         median([r["arenas"] for r in rs]),
                         fmt(median([r["one_arena_ms"] for r in rs])),
                         fmt(max(r["blocked_cleanup_us"] for r in rs) / 1000, 2),
                         fmt(max(r["stall_cleanup_us"] for r in rs) / 1000, 2),
                         fmt(max(r["blocked_quiet_us"] for r in rs) / 1000, 2)])
        return md_table([key.replace("_", " "), "variant", "runs", "cleanup ms", "wall ms",
                         "RSS before MiB", "RSS after MiB", "arenas", "one arena ms",
                         "longest block ms", "longest stall ms", "quiet block ms"], rows)

    out += [f"### Against heap size ({res['threads']} threads)", "", table(res["by_size"],
                                                                           "heap_mib"), ""]
    out += [f"### Against threads ({res['thread_mib']} MiB heap)", "",
            table(res["by_threads"], "threads"), ""]
    trims = [r for r in res["by_size"] if r["variant"] == "trim" and r["free_bytes"]]
    rounds_ = [r for r in res["by_size"] + res["by_threads"] if r["variant"] == "round"]
    trims_all = [r for r in res["by_size"] + res["by_threads"] if r["variant"] == "trim"]
    if trims and rounds_ and trims_all:
        per_mib = median([r["cleanup_ms"] / (r["free_bytes"] / MIB) for r in trims])
        worst_round = max(rounds_, key=lambda r: r["blocked_cleanup_us"])
        worst_trim = max(trims_all, key=lambda r: r["blocked_cleanup_us"])
        out += ["Reading these figures: `malloc_trim(0)` cost a median "
                f"{per_mib:.2f} ms per MiB of free heap on this machine (see the memory speed "
                "probe above). The longest a malloc was blocked during a roundtrim round was "
                f"{worst_round['blocked_cleanup_us'] / 1000:,.1f} ms "
                f"({worst_round['heap_mib']} MiB, {plural(worst_round['threads'], 'thread')}), and during a "
                f"program's own `malloc_trim(0)` {worst_trim['blocked_cleanup_us'] / 1000:,.1f} ms "
                f"({worst_trim['heap_mib']} MiB, {plural(worst_trim['threads'], 'thread')}). A probe waits "
                "for the trim of the arena it needs, so the stall follows the largest arena: "
                "with fewer arenas (roundtrim caps them at 2 by default) each holds more of the "
                "heap and its trim takes longer.", ""]
    if res["jemalloc"]:
        out += [f"### jemalloc (`LD_PRELOAD=\"libroundtrim.so libjemalloc.so.2\"`, purge of all "
                f"arenas; {res['thread_mib']} MiB, {res['threads']} threads)", "",
                table(res["jemalloc"], "heap_mib"), ""]
    if fig:
        out += ["![cleanup cost](" + fig + ")", ""]
    return out


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
        out += bench_policy.section_md(sys.modules[__name__], results["policy"])
    if "defaults" in results:
        text = results["defaults"]["markdown"]
        out += [text.replace("## Defaults:", "## 10. Defaults:", 1).rstrip("\n"), ""]
    if "trim" in results:
        out += bench_trim.section_md(sys.modules[__name__], results["trim"])
    if "dear_trim" in results:
        out += bench_dear_trim.section_md(sys.modules[__name__], results["dear_trim"])
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


# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# 5. Allocation sites: sampling's cost, the counting floor, heaptrack, and leak detection

FLOOR = os.path.join(BUILD, "tests", "libfloor_interposer.so")
HEAPTRACK_PRELOAD = "/usr/lib/heaptrack/libheaptrack_preload.so"
PY_ALLOC_LOOP = os.path.join(ROOT, "tests", "python", "alloc_loop.py")
PY_SITE_LEAK = os.path.join(ROOT, "tests", "python", "site_leak.py")
NO_SAMPLING = "n/a: library without sampling"
# The planted leak's function in each program: a tool names the planted site when its top
# site's stack shows it.
LEAK_MARKERS = {"C": "cache_round_result", "Python": "keep_round_results"}


def library_has_sampling():
    """Whether the built library knows ROUNDTRIM_SITES: a row of the roundtrim-options helper's
    table (built from the library's option table), else the name among the library's strings."""
    helper = os.path.join(BUILD, "roundtrim-options")
    if os.path.exists(helper):
        out = subprocess.run([helper, "--format", "tsv"], capture_output=True, text=True,
                             timeout=30).stdout
        if any(line.split("\t", 1)[0] == "ROUNDTRIM_SITES" for line in out.splitlines()):
            return True
    with open(LIB, "rb") as f:
        return b"ROUNDTRIM_SITES\0" in f.read()


def heaptrack_preload():
    if os.path.exists(HEAPTRACK_PRELOAD):
        return HEAPTRACK_PRELOAD
    for root, _, files in os.walk("/usr/lib"):
        if "libheaptrack_preload.so" in files:
            return os.path.join(root, "libheaptrack_preload.so")
    return None


def sites_env(variant, tmpdir, allocator="glibc"):
    """The environment of one variant: bare, floor, roundtrim (sampling off/on), heaptrack
    (its preload writing its raw trace to a file: only the host process is measured)."""
    if variant == "floor":
        return {"LD_PRELOAD": FLOOR}
    if variant == "heaptrack":
        return {"LD_PRELOAD": heaptrack_preload(),
                "DUMP_HEAPTRACK_OUTPUT": os.path.join(tmpdir, "heaptrack.raw")}
    if variant.startswith("roundtrim"):
        extra = {"ROUNDTRIM_LOG": os.path.join(tmpdir, "sites-overhead.jsonl")}
        # Off said so: left unset, sampling would start at a verdict of a growing heap.
        extra["ROUNDTRIM_SITES"] = "true" if variant == "roundtrim, sampling on" else "false"
        return allocator_env(allocator, True, extra)
    return allocator_env(allocator, False)


def ir_per_unit(pool, argv_at, env, n_pair, tmpdir, tag):
    """Instructions per unit (pair, object, round): two runs under callgrind at two sizes."""
    n1, n2 = n_pair
    f1 = pool.submit(callgrind_run, "sites", argv_at(n1), env, tmpdir, f"{tag}.{n1}")
    f2 = pool.submit(callgrind_run, "sites", argv_at(n2), env, tmpdir, f"{tag}.{n2}")
    return lambda: (callgrind_total(f2.result()) - callgrind_total(f1.result())) / (n2 - n1)


def calibration(cfg, tmpdir, pool, sampling):
    """Ir per small-block malloc/free pair: bare, the floor, roundtrim off and on; jemalloc."""
    variants = [("glibc", "bare"), ("glibc", "floor"), ("glibc", "roundtrim, sampling off"),
                ("glibc", "roundtrim, sampling on")]
    if have_jemalloc():
        variants += [("jemalloc", "bare"), ("jemalloc", "roundtrim, sampling off"),
                     ("jemalloc", "roundtrim, sampling on")]
    pending = []
    for alloc, variant in variants:
        if variant.endswith("sampling on") and not sampling:
            pending.append((alloc, variant, None))
            continue
        argv_at = lambda n: [prog("bench_alloc"), "--mix", "small", "--pairs", n,  # noqa: E731
                             "--warmup", cfg["cg_warmup"], "--threads", 1]
        env = sites_env(variant, tmpdir, alloc)
        tag = f"cal.{alloc}.{variant.replace(' ', '_').replace(',', '')}"
        pending.append((alloc, variant, ir_per_unit(pool, argv_at, env, cfg["cg_pairs"], tmpdir,
                                                    tag)))
    rows = []
    for alloc, variant, get in pending:
        rows.append({"allocator": alloc, "variant": variant,
                     "ir": get() if get else None})
    return rows


def workloads(cfg):
    """(name, unit, argv at a size, sizes for callgrind, argv for the timed runs)."""
    alloc = lambda n: [prog("bench_alloc"), "--mix", "mixed", "--pairs", n, "--threads", 1]  # noqa: E731
    pyloop = lambda n: [PY, PY_ALLOC_LOOP, n]  # noqa: E731
    fl = lambda n: [PY, PY_CLIENT, "--rounds", n, "--width", cfg["sites_fl_width"],  # noqa: E731
                    "--wait", 0]
    # Timed sizes: ten times the larger callgrind size (the FL client: that size, heaptrack
    # takes seconds per round of it).
    return [("bench_alloc (mixed mix)", "pair", alloc, cfg["sites_alloc_pairs"],
             alloc(cfg["sites_alloc_pairs"][1] * 10)),
            ("Python allocation loop", "object", pyloop, cfg["sites_py_objects"],
             pyloop(cfg["sites_py_objects"][1] * 10)),
            ("PyTorch FL-like client", "round", fl, cfg["sites_fl_rounds"],
             fl(cfg["sites_fl_rounds"][1]))]


def timed(argv, env, tmpdir, heaptrack_out=None):
    t0 = time.monotonic()
    ru0 = os.times()
    if heaptrack_out:
        run("sites", ["heaptrack", "-o", heaptrack_out] + argv, {})
    else:
        run("sites", argv, env)
    ru1 = os.times()
    return time.monotonic() - t0, (ru1.children_user - ru0.children_user
                                   + ru1.children_system - ru0.children_system)


def side_by_side(cfg, tmpdir, pool, sampling):
    names = ["bare", "roundtrim, sampling off", "roundtrim, sampling on", "heaptrack"]
    have_ht = shutil.which("heaptrack") and heaptrack_preload()
    out = []
    # The FL client's imports may run an instruction callgrind does not know: tried once.
    fl_probe = workloads(cfg)[2][2](1)
    cg_blocked = "n/a: not measured with --quick"
    if cfg["sites_fl_callgrind"]:
        try:
            callgrind_run("sites", fl_probe, {}, tmpdir, "sbs.probe")
            cg_blocked = None
        except RuntimeError as e:
            cg_blocked = cg_failure(str(e))
    for wname, unit, argv_at, sizes, timed_argv in workloads(cfg):
        if "FL-like" in wname and not os.path.exists(PY_CLIENT):
            continue
        ir = {}
        for v in names:
            if (v.endswith("sampling on") and not sampling) or (v == "heaptrack" and not have_ht):
                continue
            tag = f"sbs.{unit}.{v.replace(' ', '_').replace(',', '')}"
            if v == "heaptrack" or (unit == "round" and cg_blocked):
                ir[v] = None  # see HEAPTRACK_UNDER_VALGRIND; the client's failure below
                continue
            ir[v] = ir_per_unit(pool, argv_at, sites_env(v, tmpdir), sizes, tmpdir, tag)
        # Instruction counts first: callgrind running beside the timed runs would disturb them.
        ir_values = {}
        for v in ir:
            ir_values[v] = (None, None)
            if v == "heaptrack":
                ir_values[v] = (None, HEAPTRACK_UNDER_VALGRIND)
            elif ir[v] is None:
                ir_values[v] = (None, cg_blocked)
            else:
                try:
                    ir_values[v] = (ir[v](), None)
                except RuntimeError as e:  # valgrind stops at instructions it does not know
                    ir_values[v] = (None, cg_failure(str(e)))
        walls = {v: [] for v in names}
        ht_size = []
        for rep in range(cfg["sites_reps"]):
            for v in (names if rep % 2 == 0 else names[::-1]):
                if v not in ir:
                    continue
                ht = os.path.join(tmpdir, f"ht.{unit}.{rep}") if v == "heaptrack" else None
                walls[v].append(timed(timed_argv, sites_env(v, tmpdir), tmpdir, ht))
                if ht:
                    made = [f for f in os.listdir(tmpdir) if f.startswith(f"ht.{unit}.{rep}")]
                    ht_size.append(sum(os.path.getsize(os.path.join(tmpdir, f)) for f in made))
        rows = []
        for v in names:
            if v not in ir:
                rows.append({"variant": v, "ir": None, "wall_s": None, "cpu_s": None,
                             "note": NO_SAMPLING if v != "heaptrack" else "heaptrack missing"})
                continue
            v_ir, ir_note = ir_values[v]
            rows.append({"variant": v, "ir": v_ir, "ir_note": ir_note,
                         "wall_s": median([w[0] for w in walls[v]]),
                         "cpu_s": median([w[1] for w in walls[v]]),
                         "output_bytes": median(ht_size) if v == "heaptrack" else None})
        out.append({"workload": wname, "unit": unit, "cg_sizes": sizes, "rows": rows,
                    "timed": render_command({}, timed_argv)})
    return out


HEAPTRACK_UNDER_VALGRIND = "n/a: heaptrack's preload records nothing under valgrind"


def cg_failure(err):
    m = re.search(r"unhandled instruction bytes: ([0-9A-Fx ]{1,30})", err)
    return ("n/a: callgrind stops at an instruction it does not know "
            f"({m.group(1).strip()}...)" if m else "n/a: does not run under callgrind")


HT_ENTRY = re.compile(r"^\S.* (?:peak memory consumed|leaked) over \d+ calls from")


def heaptrack_top(report, heading):
    """The first entry under heading in heaptrack_print's output: its lines, up to the next."""
    lines, inside, entry = report.splitlines(), False, []
    for line in lines:
        if line.strip() == heading:
            inside = True
            continue
        if inside:
            if HT_ENTRY.match(line) and entry:
                break
            if line.strip() or entry:
                entry.append(line)
            if line.isupper() and entry:
                break
    return "\n".join(entry)


def heaptrack_detection(argv_at, marker, ks, tmpdir, tag):
    """For each k: the program runs k rounds under heaptrack; is the planted function in the
    top leaked and the top peak entry of heaptrack_print?"""
    per_k = []
    for k in ks:
        out = os.path.join(tmpdir, f"detect.{tag}.{k}")
        run("sites", ["heaptrack", "-o", out] + argv_at(k), {})
        made = [os.path.join(tmpdir, f) for f in os.listdir(tmpdir)
                if f.startswith(f"detect.{tag}.{k}.") or f == f"detect.{tag}.{k}"]
        report = run("sites", ["heaptrack_print", "-f", made[0], "--print-peaks", "1",
                               "--print-leaks", "1", "--print-allocators", "0",
                               "--print-temporary", "0",
                               "--peak-limit", "1", "--sub-peak-limit", "3"], {},
                     record=k == ks[0]).stdout
        top_leak = marker in heaptrack_top(report, "MEMORY LEAKS")
        top_peak = marker in heaptrack_top(report, "PEAK MEMORY CONSUMERS")
        per_k.append({"rounds": k, "top_leaked": top_leak, "top_peak": top_peak,
                      "top_leaked_entry": heaptrack_top(report, "MEMORY LEAKS")[:300]})
    found = {key: first_stable([(r["rounds"], r[f"top_{key}"]) for r in per_k])
             for key in ("leaked", "peak")}
    return found, per_k


def site_lists(rec):
    """[(name, sites)] of a sites record that are not empty: the growth list first (grown: live
    bytes gained since the previous record), then round_live (bytes of this round still live at
    its end) and live (the sites by live bytes)."""
    return [(k, rec[k]) for k in ("grown", "round_live", "live")
            if isinstance(rec.get(k), list) and rec[k] and isinstance(rec[k][0], dict)]


def names_marker(site, marker, resolver=None):
    """Whether a site's stack, as `roundtrim report --sites` prints it (Python frames, native
    frames named by the log or by the module's symbols), shows the marker function."""
    resolver = resolver or roundtrim_sites.Resolver()
    return any(marker in line for line in roundtrim_sites.stack_lines(site, resolver))


def first_stable(hits):
    """[(round, hit)] in order: the first round from which every later one hits, or None."""
    first = None
    for rnd, hit in hits:
        if hit and first is None:
            first = rnd
        elif not hit:
            first = None
    return first


def roundtrim_detection(argv, marker, tmpdir, tag):
    """One run with sampling on: the first round from which the planted site stays the top
    site of the per-round sites records, and whether `roundtrim report --sites` names it."""
    log = os.path.join(tmpdir, f"detect.{tag}.jsonl")
    run("sites", argv, {"LD_PRELOAD": LIB, "ROUNDTRIM_SITES": "true", "ROUNDTRIM_LOG": log})
    resolver = roundtrim_sites.Resolver()
    recs = [r for r in read_log(log) if r.get("event") == "sites"]
    # The library's own view: the top of each record's growth list.
    tops = []
    for i, rec in enumerate(recs, start=1):
        lists = site_lists(rec)
        tops.append((rec.get("round", i),
                     bool(lists) and names_marker(lists[0][1][0], marker, resolver)))
    # The report's view: the top growing site fitted over the last rounds up to each round.
    fits = []
    usable = roundtrim_sites.usable_records(recs)
    for k in range(roundtrim_sites.MIN_POINTS, len(usable) + 1):
        window = usable[:k][-roundtrim_sites.DEFAULT_LAST:]
        grows, _ = roundtrim_sites.growing_sites(window)
        fits.append((usable[k - 1]["round"],
                     bool(grows) and names_marker(grows[0].site.entry, marker, resolver)))
    rep = subprocess.run([os.path.join(ROOT, "scripts", "roundtrim"), "report", "--sites", log],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    COMMANDS.add("sites", {}, ["scripts/roundtrim", "report", "--sites", log])
    return {"records": len(recs), "first_round": first_stable(tops),
            "first_round_fit": first_stable(fits),
            "report_names": rep.returncode == 0 and marker in rep.stdout}


def detection(cfg, tmpdir, sampling):
    ks = cfg["sites_detect_rounds"]
    progs = [("C", lambda k: [prog("site_leak"), "--rounds", k, "--churn-mib",
                              cfg["sites_churn_mib"]]),
             ("Python", lambda k: [PY, PY_SITE_LEAK, "--rounds", k, "--churn-mib",
                                   cfg["sites_churn_mib"]])]
    rows = []
    for lang, argv_at in progs:
        row = {"program": lang, "marker": LEAK_MARKERS[lang], "rounds": ks[-1]}
        if shutil.which("heaptrack") and shutil.which("heaptrack_print"):
            row["heaptrack"], row["heaptrack_runs"] = heaptrack_detection(
                argv_at, LEAK_MARKERS[lang], ks, tmpdir, lang)
        if sampling:
            row["roundtrim"] = roundtrim_detection(argv_at(ks[-1]), LEAK_MARKERS[lang], tmpdir,
                                                   lang)
        rows.append(row)
    return rows


def section_sites(cfg, tmpdir):
    missing = [p for p in (FLOOR, prog("site_leak")) if not os.path.exists(p)]
    if missing:
        return {"skipped": f"{', '.join(map(short_path, missing))} not built (make bench)"}
    sampling = library_has_sampling()
    if not sampling:
        print(f"bench: sites: {NO_SAMPLING}", file=sys.stderr, flush=True)
    result = {"sampling": sampling, "heaptrack": dpkg_version("heaptrack"),
              "calibration_pairs": cfg["cg_pairs"], "reps": cfg["sites_reps"],
              "churn_mib": cfg["sites_churn_mib"], "detect_rounds": cfg["sites_detect_rounds"]}
    if shutil.which("valgrind"):
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            result["calibration"] = calibration(cfg, tmpdir, pool, sampling)
            result["side_by_side"] = side_by_side(cfg, tmpdir, pool, sampling)
    else:
        result["skipped_instructions"] = "valgrind is not installed"
    result["detection"] = detection(cfg, tmpdir, sampling)
    return result


def section_md_sites(res):
    out = ["## 5. Allocation sites: cost of sampling, the counting floor, heaptrack", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    if not res["sampling"]:
        out += [f"**Sampling:** {NO_SAMPLING} (the built `libroundtrim.so` has no "
                "`ROUNDTRIM_SITES` option): the 'sampling on' rows and roundtrim's detection "
                "say n/a.", ""]
    ir = lambda x: fmt(x, 1) if x is not None else NO_SAMPLING  # noqa: E731
    if "calibration" in res:
        out += ["### Instructions per small-block malloc/free pair", "",
                "`bench_alloc --mix small --threads 1` under callgrind at two pair counts "
                f"({res['calibration_pairs'][0]:,} and {res['calibration_pairs'][1]:,}); "
                "Ir per pair = difference of the totals / difference of the pairs. **floor** = "
                "`tests/bench/interposer/floor_interposer.c` (`build/tests/"
                "libfloor_interposer.so`): the thinnest interposer that counts what roundtrim "
                "counts (calls and usable bytes of allocations and frees, per thread, "
                "initial-exec TLS) and forwards straight to `__libc_malloc`/`__libc_free`. "
                "jemalloc rows preload it after roundtrim.", ""]
        bare = {r["allocator"]: r["ir"] for r in res["calibration"] if r["variant"] == "bare"}
        floor = next((r["ir"] for r in res["calibration"] if r["variant"] == "floor"), None)
        rows = []
        for r in res["calibration"]:
            b = bare.get(r["allocator"])
            rows.append([r["allocator"], r["variant"], ir(r["ir"]),
                         fmt(r["ir"] - b) if r["ir"] is not None and b else "n/a",
                         fmt(r["ir"] - floor) if r["ir"] is not None and floor
                         and r["allocator"] == "glibc" else "-"])
        out += [md_table(["allocator", "variant", "Ir per pair", "above bare", "above floor"],
                         rows), ""]
    if "side_by_side" in res:
        out += ["### Side by side: bare, roundtrim with sampling off and on, heaptrack", "",
                "Ir per unit: callgrind at two sizes of the workload (difference / difference). "
                "heaptrack has no instruction figure: its preload turns itself off under "
                "valgrind (its trace stays empty), so its CPU time (the program's and "
                "heaptrack's own trace interpretation, all child processes) stands in. Wall "
                "and CPU: "
                f"median of {res['reps']} runs of the timed command (interleaved, the order "
                "reversed every other run; heaptrack through `heaptrack -o FILE`, its "
                "compressed output's size beside). Sizes: bench_alloc mixed mix (90% 16-512 B), "
                "the Python loop (`tests/python/alloc_loop.py`: bytes/bytearray of 600 B-16 KiB), "
                "the PyTorch FL-like client (`tests/python/fl_client.py`, one round per unit).",
                ""]
        for w in res["side_by_side"]:
            base = next(r for r in w["rows"] if r["variant"] == "bare")
            rows = []
            for r in w["rows"]:
                if r["wall_s"] is None:
                    rows.append([r["variant"], r["note"], "n/a", "n/a", "n/a", "n/a", "-"])
                    continue
                ir_cells = ([fmt(r["ir"]), pct(r["ir"] / base["ir"])] if r["ir"] is not None
                            and base["ir"] else [r["ir_note"] or "n/a", "n/a"])
                rows.append([r["variant"]] + ir_cells + [
                             fmt(r["wall_s"], 2), pct(r["wall_s"] / base["wall_s"]),
                             fmt(r["cpu_s"], 2),
                             fmt(r["output_bytes"] / MIB, 2) + " MiB"
                             if r.get("output_bytes") else "-"])
            out += [f"**{w['workload']}** (Ir per {w['unit']}; timed: `{w['timed']}`)", "",
                    md_table(["variant", f"Ir per {w['unit']}", "vs bare", "wall s", "vs bare",
                              "CPU s", "output"], rows), ""]
    out += ["### Detection of a planted leak", "",
            "`tests/bench/site_leak.c` (built with -g) and `tests/python/site_leak.py`: each "
            f"round churns about {res['churn_mib']} MiB through other call sites, replaces an "
            "8 MiB model, and one site (`cache_round_result` / `keep_round_results`) keeps 1 MiB "
            "more. heaptrack: the program runs k rounds under `heaptrack -o`, then "
            "`heaptrack_print`; 'top leaked' / 'top peak' = the first k (of "
            f"{', '.join(map(str, res['detect_rounds']))}) from which the planted function is in "
            "the first entry of MEMORY LEAKS / PEAK MEMORY CONSUMERS (heaptrack reports at exit, "
            "when the model is freed and the planted blocks are not). roundtrim: one run of "
            f"{res['detect_rounds'][-1]} rounds with `ROUNDTRIM_SITES=true`; 'top growing site': "
            "the first round from which the planted site is the top growing site of the rounds "
            "so far (the least-squares fit of `roundtrim report --sites` over the last 5 rounds, "
            "from round 3 on); 'top of grown': the first round from which it is the first site of "
            "each round's sites record by live bytes gained since the previous record (a round "
            "in which no planted block was sampled loses it for that round); and whether "
            "`roundtrim report --sites` names it.", ""]
    rows = []
    for d in res["detection"]:
        ht = d.get("heaptrack")
        first = lambda k: f"after {plural(k, 'round')}" if k else "no"  # noqa: E731
        rt = d.get("roundtrim")
        rows.append([d["program"], f"`{d['marker']}`",
                     first(ht["leaked"]) if ht else "heaptrack missing",
                     first(ht["peak"]) if ht else "heaptrack missing",
                     (first(rt.get("first_round_fit")) + f" ({rt['records']} sites records)")
                     if rt else NO_SAMPLING,
                     first(rt["first_round"]) if rt else NO_SAMPLING,
                     ("yes" if rt["report_names"] else "no") if rt else NO_SAMPLING])
    out += [md_table(["program", "planted site", "heaptrack top leaked", "heaptrack top peak",
                      "roundtrim top growing site", "roundtrim top of grown",
                      "roundtrim report --sites names it"], rows),
            ""]
    return out


# --------------------------------------------------------------------------------------------
# 6. Start-up, and 7. what a real program pays over its whole process tree

EMPTY_PRELOAD = os.path.join(BUILD, "tests", "libempty_preload.so")
PY_JSON = os.path.join(ROOT, "tests", "bench", "programs_json.py")


def program_variants(with_start_floors):
    """(name, environment) of each variant: bare, then the preloads."""
    variants = [("bare", {})]
    if with_start_floors and os.path.exists(EMPTY_PRELOAD):
        variants.append(("empty preload", {"LD_PRELOAD": EMPTY_PRELOAD}))
    if os.path.exists(FLOOR):
        variants.append(("counting floor", {"LD_PRELOAD": FLOOR}))
    variants.append(("roundtrim", {"LD_PRELOAD": LIB}))
    if with_start_floors and have_jemalloc():
        variants.append(("jemalloc", {"LD_PRELOAD": JEMALLOC}))
    return variants


def callgrind_tree(section, argv, env_delta, tmpdir, tag):
    """Instructions of a command and of every process it starts (callgrind --trace-children),
    and how many processes that was."""
    pattern = os.path.join(tmpdir, f"cgt.{tag}.%p")
    vg = ["valgrind", "--tool=callgrind", "--trace-children=yes",
          f"--callgrind-out-file={pattern}"]
    COMMANDS.add(section, env_delta, vg[:3] + ["--callgrind-out-file=OUT.%p"] + argv)
    proc = subprocess.run(vg + [str(a) for a in argv], env=clean_env(env_delta),
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind {tag} failed: {proc.stderr.strip()[-800:]}")
    prefix = f"cgt.{tag}."
    files = [os.path.join(tmpdir, f) for f in os.listdir(tmpdir) if f.startswith(prefix)]
    total = sum(callgrind_total(f) for f in files)
    for f in files:
        os.unlink(f)
    return total, len(files)


def wall_medians(section, argv, variants, reps, emptied=False):
    """Median wall seconds of each variant, the runs interleaved."""
    times = {name: [] for name, _ in variants}
    for name, env in variants:
        COMMANDS.add(section, env, argv, emptied)
    for _ in range(reps):
        for name, env in variants:
            t0 = time.perf_counter()
            subprocess.run(argv, env=run_env(env, emptied), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120, cwd=ROOT)
            times[name].append(time.perf_counter() - t0)
    return {name: median(ts) for name, ts in times.items()}


HASHED = {"PYTHONHASHSEED": "0"}  # the same dict layouts in every run
# (label, argv, variables, emptied): emptied runs with only the variant's variables (env -i),
# the others with the caller's environment.
STARTUP_PROGRAMS = [("/bin/true", ["/bin/true"], {}, False),
                    ("/bin/true, emptied environment", ["/bin/true"], {}, True),
                    ("python3 -c pass", [PY, "-c", "pass"], HASHED, False)]
STARTUP_GOAL = 60000  # instructions of /bin/true above an empty preload


def callgrind_inclusive(out_file, obj):
    """{'file:function': Ir} of the functions of object obj, inclusive counts."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no",
                          out_file], capture_output=True, text=True, timeout=120).stdout
    funcs = {}
    for line in out.splitlines():
        m = ANNOTATE_LINE.match(line)
        if m and m.group(3) and os.path.basename(m.group(3)) == obj:
            name = m.group(2).replace(ROOT + "/", "")
            funcs[name] = max(funcs.get(name, 0), int(m.group(1).replace(",", "")))
    return funcs


def section_startup(cfg, tmpdir):
    """Each program once under callgrind per variant (counts are deterministic), then the wall
    time of all variants interleaved; for roundtrim, where its instructions go: the functions
    whose exclusive counts grew most over the empty preload's, and its own functions' inclusive
    counts."""
    rows = []
    variants = program_variants(True)
    for label, argv, extra, emptied in STARTUP_PROGRAMS:
        row = {"program": label, "instructions": {}, "wall_ms": {}}
        files = {}
        for i, (name, env) in enumerate(variants):
            out = callgrind_run("startup", argv, dict(env, **extra), tmpdir,
                                f"startup.{len(rows)}.{i}", emptied)
            row["instructions"][name] = callgrind_total(out)
            files[name] = out
        if "roundtrim" in files and "empty preload" in files and not emptied:
            mine, base = callgrind_functions(files["roundtrim"]), callgrind_functions(
                files["empty preload"])
            grown = {k: mine.get(k, 0) - base.get(k, 0) for k in set(mine) | set(base)}
            row["grown"] = sorted(([k, v] for k, v in grown.items() if v > 0),
                                  key=lambda kv: -kv[1])[:cfg["startup_top"]]
            own = callgrind_inclusive(files["roundtrim"], os.path.basename(LIB))
            row["inclusive"] = sorted(own.items(), key=lambda kv: -kv[1])[:cfg["startup_top"]]
        walls = wall_medians("startup", argv, [(n, dict(e, **extra)) for n, e in variants],
                             cfg["start_reps"], emptied)
        row["wall_ms"] = {n: w * 1000 for n, w in walls.items()}
        rows.append(row)
    return {"start": rows, "reps": cfg["start_reps"]}


def section_md_startup(res):
    out = ["## 6. Start-up", "",
           "Every process of a container pays roundtrim's start. Instructions of the whole process "
           "(callgrind, one run each: the counts are deterministic) and median wall time of "
           f"{res.get('reps', '?')} runs per variant, interleaved. An empty preloaded library "
           "(`tests/bench/interposer/empty_preload.c`) is what any `LD_PRELOAD` costs; the counting "
           "floor is the thinnest interposer that counts what roundtrim counts "
           "(`tests/bench/interposer/floor_interposer.c`). In brackets: above bare.", ""]
    starts = res.get("start", [])
    if not starts:
        return out
    names = list(starts[0]["instructions"])
    rows = []
    for r in starts:
        bare = r["instructions"]["bare"]
        rows.append([f"`{r['program']}`", "instructions"] +
                    [f"{r['instructions'][n]:,}" + ("" if n == "bare" else
                     f" (+{r['instructions'][n] - bare:,})") for n in names])
        rows.append(["", "wall ms"] + [f"{r['wall_ms'][n]:.2f}" for n in names])
    out += [md_table(["program", ""] + names, rows), ""]
    for true in (r for r in starts if r["program"].startswith("/bin/true")):
        ins = true["instructions"]
        if "empty preload" in ins and "roundtrim" in ins:
            above = ins["roundtrim"] - ins["empty preload"]
            how = (" with an emptied environment" if "emptied" in true["program"]
                   else " with the caller's environment")
            out += [f"roundtrim above the empty preload for `/bin/true`{how}: **{above:,}** "
                    f"instructions (goal: at most {STARTUP_GOAL:,}).", ""]
    for r in starts:
        if "grown" not in r:
            continue
        out += [f"Where roundtrim's start-up goes in `{r['program']}`: the functions whose "
                "exclusive instruction counts grew most over the empty preload's (loader, libc "
                "and roundtrim; `_dl_relocate_object`, `do_lookup_x`, `_dl_fixup` are the "
                "loader relocating the library and binding the libc functions it calls), and "
                "roundtrim's own functions with what they call (inclusive, so nested entries "
                "overlap):", ""]
        left = [[f"`{k}`", f"{v:,}"] for k, v in r["grown"]]
        right = [[f"`{k}`", f"{v:,}"] for k, v in r["inclusive"]]
        n = max(len(left), len(right))
        left += [["", ""]] * (n - len(left))
        right += [["", ""]] * (n - len(right))
        out += [md_table(["grown over the empty preload (exclusive)", "Ir",
                          "roundtrim's functions (inclusive)", "Ir"],
                         [a + b for a, b in zip(left, right)]), ""]
    return out


def section_programs(cfg, tmpdir):
    whole_programs = [
        ("gcc -O2 -c runtime/rounds/round.c",
         ["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-I.", "-Iinclude", "-O2", "-c",
          "runtime/rounds/round.c", "-o", os.path.join(tmpdir, "round.o")], {}),
        ("git log --stat -n 200", ["git", "log", "--stat", "-n", "200"], {}),
        ("python3 tests/bench/programs_json.py", [PY, PY_JSON], HASHED),
    ]
    wholes = []
    for label, argv, extra in whole_programs:
        row = {"program": label, "instructions": {}, "processes": 0}
        for name, env in program_variants(False):
            row["instructions"][name], row["processes"] = callgrind_tree(
                "programs", argv, dict(env, **extra), tmpdir, f"whole.{len(wholes)}")
        wholes.append(row)
    return {"whole": wholes}


def section_md_programs(res):
    out = ["## 7. Whole programs: the cost of a real program", ""]
    wholes = res.get("whole", [])
    if wholes:
        names = list(wholes[0]["instructions"])
        out += ["Instructions of the command and every process it starts (callgrind "
                "`--trace-children=yes`), as a ratio to the bare run. The goal for a library "
                "preloaded everywhere is at most 1.01.", ""]
        rows = []
        for r in wholes:
            bare = r["instructions"]["bare"]
            rows.append([f"`{r['program']}`", str(r["processes"]), f"{bare:,}"] +
                        [f"{r['instructions'][n] / bare:.4f}" for n in names if n != "bare"])
        out += [md_table(["program", "processes", "bare instructions"] +
                         [n for n in names if n != "bare"], rows), ""]
        out += ["What roundtrim adds above the counting floor in these programs comes from its "
                "start-up in each process (section 6) and from the fast path's few instructions "
                "per call above the floor's (section 1).", ""]
    return out


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


# --------------------------------------------------------------------------------------------
# 8. The diagnosis: the cost of the memory breakdown, and of the sampling a leak's site needs


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
                "policy": lambda cfg, tmpdir: bench_policy.section(sys.modules[__name__], cfg,
                                                                   tmpdir),
                "defaults": section_defaults,
                "trim": lambda cfg, tmpdir: bench_trim.section(sys.modules[__name__], cfg, tmpdir),
                "dear_trim": lambda cfg, tmpdir: bench_dear_trim.section(sys.modules[__name__],
                                                                         cfg, tmpdir)}
    global TMP_ROOT
    with tempfile.TemporaryDirectory(prefix="roundtrim-bench.") as tmpdir:
        TMP_ROOT = tmpdir
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
