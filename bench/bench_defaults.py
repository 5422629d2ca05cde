#!/usr/bin/python3
"""bench_defaults.py: the table that roundtrim's role defaults for ROUNDTRIM_ARENA_MAX and
ROUNDTRIM_MMAP_THRESHOLD are chosen from.

It runs the native FL-like workload (tests/programs/fl_workload.c: T threads build and free a
model's worth of 4-64 KiB blocks per round and keep a fifth of it alive into the next round) for
every combination of

  threads T                      1, 2, 4, 8, 16
  ROUNDTRIM_ARENA_MAX            0 (glibc's own cap: 8 x cores), 1, 2, 4, 8
  ROUNDTRIM_MMAP_THRESHOLD       0 (glibc's dynamic threshold), 131072, 1048576
  cleanup                        off (ROUNDTRIM_GC_ROUNDS=0: what the caps do alone), every
                                 round (ROUNDTRIM_GC_ROUNDS=1 ROUNDTRIM_ADAPTIVE=false: every
                                 action every round), policy (ROUNDTRIM_GC_ROUNDS=1 with the
                                 default cleanup policy)

with roundtrim preloaded (--mode signal: the program sends itself the round signal, as a
launcher would), next to the same program without roundtrim (--mode plain, "bare"), with a 64 MiB
model. A second, smaller matrix runs a 512 MiB model (the size at which a cap of 2 was seen to
end above bare glibc) at T = 4 and 16 with thresholds 0 and 131072; a third the PyTorch FL-like
client (tests/python/fl_client.py, one compute thread, rounds ended by
ROUNDTRIM_PY_HOOK=fl_task:train_round) with caps 0, 2, 4 and all three thresholds. The native
workload's blocks are all below 128 KiB, so only the Python client (4 MiB weight buffers) shows
what the mmap threshold does.

Per run it records:
  end RSS    median of the RSS the program itself prints at the end of each round (after its
             pause, when roundtrim's cleanup has normally finished), over the second half of the
             rounds (the first rounds build the heap up);
  rss_after  the same median of the round records' rss_after (roundtrim's RSS after its cleanup;
             where a trim takes about as long as the pause, as with the 512 MiB model, the
             program's own figure may come before the trim ends, and this one is the figure);
  peak       the process's peak RSS (ru_maxrss from os.wait4);
  CPU        user + system time of the whole process (os.wait4), so it includes roundtrim's worker
             thread and its trims; reported as rounds per CPU second (native) or CPU seconds per
             run (Python, whose import of torch is a constant part of it);
  wall       the run's wall time less the rounds' pauses, as rounds per wall second;
  faults     minor page faults of the process per round (os.wait4): memory given back and
             touched again costs a fault per page, which is most of a cleanup's CPU cost;
  trim       median trim_us of the round records over the second half of the rounds.
Each cell runs --repeats times (3 for the 64 MiB matrix, 2 for the others, 1 with --quick), the
cells of one repetition in a shuffled order so that a change in the machine's load spreads over
all of them; the tables give medians. The full run takes about 20 minutes on a 2-core machine.
On a shared 2-core machine wall time follows the neighbours' load: read the CPU-time figures
first. Every run is checked: the round log's start record must show the settings asked for, and
there must be one record per round.

    bench/bench_defaults.py [--quick] [--out FILE] [--repeats N] [--threads 1,2,4]
                              [--only native,large,python]

--quick runs a small matrix (T 1, 4, 16; caps 0, 2, 4; thresholds 0 and 131072; one run each;
fewer Python rounds), a minute or two. --out writes the Markdown section to FILE as well as to
stdout; progress goes to stderr. BUILD names the build folder (default build/): it needs
build/libroundtrim.so and build/tests/fl_workload (make lib build/tests/fl_workload); the Python
part needs torch for /usr/bin/python3 and is skipped, with a note, without it. MALLOC_*,
GLIBC_TUNABLES, LD_PRELOAD, ROUNDTRIM_* and NVFLARE_* are removed from the runs' environment.
"""

import argparse
import datetime
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
BUILD_ABS = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
LIB = os.path.join(BUILD_ABS, "libroundtrim.so")
WORKLOAD = os.path.join(BUILD_ABS, "tests", "fl_workload")
PY = "/usr/bin/python3"
PY_CLIENT = os.path.join(ROOT, "tests", "python", "fl_client.py")
PY_HOOK = "fl_task:train_round"
MIB = 1024 * 1024
SCRUBBED_PREFIXES = ("MALLOC_", "ROUNDTRIM_", "NVFLARE_")
SCRUBBED = ("GLIBC_TUNABLES", "LD_PRELOAD", "MALLOC_CONF")
LOG_SHOWN = "$LOG"  # how the commands show the per-run log file


# --------------------------------------------------------------------------------------------
# The matrices


def matrices(quick, threads_arg, only):
    """The sections to run, each a dict of its fixed parameters and its axes."""
    full = not quick
    native = {
        "name": "native",
        "title": "Native FL-like workload",
        "kind": "native",
        "model_mib": 64,
        "rounds": 16,
        "pause_ms": 50,
        "threads": threads_arg or ([1, 2, 4, 8, 16] if full else [1, 4, 16]),
        "caps": [0, 1, 2, 4, 8] if full else [0, 2, 4],
        "thresholds": [0, 131072, 1048576] if full else [0, 131072],
        "gc": [0, 1, 2],
    }
    large = {
        "name": "large",
        "title": "Native FL-like workload, a model eight times larger",
        "kind": "native",
        "model_mib": 512,
        "rounds": 12,
        "pause_ms": 50,
        "threads": [4, 16] if full else [4],
        "caps": [0, 1, 2, 4, 8] if full else [0, 2],
        "thresholds": [0, 131072],
        "gc": [0, 1, 2],
        "repeats": 2 if full else 1,
    }
    python = {
        "name": "python",
        "title": "PyTorch FL-like client",
        "kind": "python",
        "width": 1024,
        "rounds": 12 if full else 6,
        "wait_s": 0.1,
        "threads": [1],  # the client sets torch.set_num_threads(1)
        "caps": [0, 2, 4] if full else [0, 2],
        "thresholds": [0, 131072, 1048576] if full else [0],
        "gc": [0, 1, 2],
        "repeats": 2 if full else 1,
    }
    chosen = [native, large, python]
    if only:
        chosen = [s for s in chosen if s["name"] in only]
    return chosen


def cells(section):
    """Every (threads, cap, threshold, gc) of a section; cap None is the bare program."""
    out = []
    for t in section["threads"]:
        out.append((t, None, None, None))
        for cap in section["caps"]:
            for thr in section["thresholds"]:
                for gc in section["gc"]:
                    out.append((t, cap, thr, gc))
    return out


# --------------------------------------------------------------------------------------------
# Running one program


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED}
    return env


def rel(path):
    """A path as the commands show it: relative to the repository root where it lies inside."""
    r = os.path.relpath(path, ROOT)
    return path if r.startswith("..") else r


def command_for(section, cell, log):
    """(environment additions, argv) of one run."""
    t, cap, thr, gc = cell
    extra = []
    if cap is not None:
        extra = [("LD_PRELOAD", LIB), ("ROUNDTRIM_ARENA_MAX", str(cap)),
                 ("ROUNDTRIM_MMAP_THRESHOLD", str(thr)), ("ROUNDTRIM_GC_ROUNDS", str(min(gc, 1)))]
        if gc == 1:
            extra.append(("ROUNDTRIM_ADAPTIVE", "false"))
        if section["kind"] == "python":
            extra.append(("ROUNDTRIM_PY_HOOK", PY_HOOK))
        extra.append(("ROUNDTRIM_LOG", log))
    if section["kind"] == "native":
        argv = [WORKLOAD, "--rounds", str(section["rounds"]), "--threads", str(t),
                "--model-mib", str(section["model_mib"]), "--pause-ms", str(section["pause_ms"]),
                "--mode", "plain" if cap is None else "signal"]
    else:
        argv = [PY, PY_CLIENT, "--rounds", str(section["rounds"]), "--width",
                str(section["width"]), "--wait", str(section["wait_s"]), "--mode", "plain"]
    return extra, argv


def shown(extra, argv):
    """The command line as printed: paths relative to the root, the log as $LOG."""
    parts = []
    for k, v in extra:
        v = LOG_SHOWN if k == "ROUNDTRIM_LOG" else rel(v)
        parts.append("%s=%s" % (k, v if v == LOG_SHOWN else shlex.quote(v)))
    parts += [shlex.quote(a if a == PY else rel(a)) for a in argv]
    return " ".join(parts)


def spawn(extra, argv, stdout_path):
    """Runs argv; returns (exit status, wall seconds, CPU seconds, peak RSS bytes, minor page
    faults)."""
    env = clean_env()
    env.update(extra)
    with open(stdout_path, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, ru.ru_minflt


def read_json_lines(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def second_half(values_by_round, rounds):
    return [v for r, v in values_by_round if r > rounds // 2]


def run_one(section, cell, tmp, index):
    """One run of one cell: its figures, or raises with what went wrong."""
    log = os.path.join(tmp, "run%d.jsonl" % index)
    out = os.path.join(tmp, "run%d.out" % index)
    extra, argv = command_for(section, cell, log)
    rc, wall, cpu, peak, faults = spawn(extra, argv, out)
    if rc != 0:
        raise RuntimeError("exit status %d: %s" % (rc, shown(extra, argv)))
    rounds = section["rounds"]
    own = [(o["round"], o["rss"]) for o in read_json_lines(out) if "round" in o and "rss" in o]
    if len(own) != rounds:
        raise RuntimeError("%d of %d round lines: %s" % (len(own), rounds, shown(extra, argv)))
    res = {"end": statistics.median(second_half(own, rounds)), "peak": peak, "cpu": cpu,
           "wall": wall, "faults_per_round": faults / rounds, "rss_after": None,
           "trim_us": None, "trim_released": None}
    if section["kind"] == "native":
        work = wall - rounds * section["pause_ms"] / 1000.0
        res["rounds_per_cpu_s"] = rounds / cpu if cpu > 0 else float("nan")
        res["rounds_per_wall_s"] = rounds / work if work > 0 else float("nan")
    t, cap, thr, gc = cell
    if cap is None:
        return res
    records = read_json_lines(log)
    start = next((r for r in records if r.get("event") == "start"), None)
    if start is None:
        raise RuntimeError("no start record in the round log: %s" % shown(extra, argv))
    want = {"ROUNDTRIM_ARENA_MAX": str(cap), "ROUNDTRIM_MMAP_THRESHOLD": str(thr),
            "ROUNDTRIM_GC_ROUNDS": str(min(gc, 1))}
    for k, v in want.items():
        got = start.get("settings", {}).get(k, {}).get("value")
        if got != v:
            raise RuntimeError("%s is %r in the start record, not %r" % (k, got, v))
    rounds_rec = [r for r in records if r.get("event") == "round"]
    if len(rounds_rec) != rounds:
        raise RuntimeError("%d of %d round records: %s" % (len(rounds_rec), rounds,
                                                           shown(extra, argv)))
    res["rss_after"] = statistics.median(
        second_half([(r["round"], r["rss_after"]) for r in rounds_rec], rounds))
    if gc:
        trims = second_half([(r["round"], r.get("trim_us", 0)) for r in rounds_rec], rounds)
        res["trim_us"] = statistics.median(trims)
        released = second_half([(r["round"], r.get("trim_released_bytes", 0))
                                for r in rounds_rec], rounds)
        res["trim_released"] = statistics.median(released)
    return res


# --------------------------------------------------------------------------------------------
# Summaries and Markdown


def med(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=1, scale=1.0):
    if v is None:
        return "-"
    return "{:,.{d}f}".format(v / scale, d=digits)


def cap_name(cap):
    return "bare" if cap is None else ("0 (glibc's)" if cap == 0 else str(cap))


def thr_name(thr):
    return {None: "-", 0: "dynamic (0)", 131072: "128 KiB", 1048576: "1 MiB"}.get(thr, str(thr))


# How each cleanup value is set, as the commands show it.
GC_SETTINGS = {0: "ROUNDTRIM_GC_ROUNDS=0", 1: "ROUNDTRIM_GC_ROUNDS=1 ROUNDTRIM_ADAPTIVE=false",
               2: "ROUNDTRIM_GC_ROUNDS=1"}


def gc_name(gc):
    return {None: "-", 0: "off", 1: "every round", 2: "policy"}[gc]


def pivot(section, results, key, gc, digits=1, scale=1.0, with_bare=True):
    """Rows (T, threshold), columns bare and each cap: the median of key."""
    head = ["T", "mmap threshold"] + (["bare"] if with_bare else []) + \
        ["cap %s" % cap_name(c) for c in section["caps"]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in section["threads"]:
        bare = med(results.get((t, None, None, None), []), key)
        for thr in section["thresholds"]:
            row = [str(t), thr_name(thr)] + ([fmt(bare, digits, scale)] if with_bare else [])
            for cap in section["caps"]:
                row.append(fmt(med(results.get((t, cap, thr, gc), []), key), digits, scale))
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def full_table(section, results):
    native = section["kind"] == "native"
    head = ["T", "cap", "mmap threshold", "cleanup", "runs", "end RSS MiB", "end RSS range",
            "rss_after MiB", "peak MiB", "end vs bare"]
    head += ["rounds / CPU s", "rounds / wall s"] if native else ["CPU s", "wall s"]
    head += ["page faults / round", "trim ms", "trim gave MiB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in cells(section):
        t, cap, thr, gc = cell
        runs = results.get(cell, [])
        if not runs:
            continue
        bare = med(results.get((t, None, None, None), []), "end")
        end = med(runs, "end")
        ends = [r["end"] for r in runs]
        row = [str(t), cap_name(cap), thr_name(thr), gc_name(gc), str(len(runs)),
               fmt(end, 1, MIB), "%s-%s" % (fmt(min(ends), 1, MIB), fmt(max(ends), 1, MIB)),
               fmt(med(runs, "rss_after"), 1, MIB), fmt(med(runs, "peak"), 1, MIB),
               "-" if cap is None or not bare else "%+.1f%%" % (100.0 * (end / bare - 1))]
        if native:
            row += [fmt(med(runs, "rounds_per_cpu_s"), 1), fmt(med(runs, "rounds_per_wall_s"), 1)]
        else:
            row += [fmt(med(runs, "cpu"), 2), fmt(med(runs, "wall"), 2)]
        row += [fmt(med(runs, "faults_per_round"), 0), fmt(med(runs, "trim_us"), 2, 1000.0),
                fmt(med(runs, "trim_released"), 1, MIB)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def loop_commands(section):
    """The exact commands of a section, as shell loops over its axes."""
    ts = " ".join(map(str, section["threads"]))
    caps = " ".join(map(str, section["caps"]))
    thrs = " ".join(map(str, section["thresholds"]))
    gcs = " ".join(shlex.quote(GC_SETTINGS[g]) for g in section["gc"])
    lib = rel(LIB)
    if section["kind"] == "native":
        base = "%s --rounds %d --threads $T --model-mib %d --pause-ms %d" % (
            rel(WORKLOAD), section["rounds"], section["model_mib"], section["pause_ms"])
        bare = "for T in %s; do %s --mode plain; done" % (ts, base)
        pre = ("for T in %s; do for A in %s; do for M in %s; do for G in %s; do\n"
               "  env $G LD_PRELOAD=%s ROUNDTRIM_ARENA_MAX=$A ROUNDTRIM_MMAP_THRESHOLD=$M "
               "ROUNDTRIM_LOG=$LOG \\\n    %s --mode signal\n"
               "done; done; done; done") % (ts, caps, thrs, gcs, lib, base)
    else:
        base = "%s %s --rounds %d --width %d --wait %s --mode plain" % (
            PY, rel(PY_CLIENT), section["rounds"], section["width"], section["wait_s"])
        bare = base
        pre = ("for A in %s; do for M in %s; do for G in %s; do\n"
               "  env $G LD_PRELOAD=%s ROUNDTRIM_PY_HOOK=%s ROUNDTRIM_ARENA_MAX=$A "
               "ROUNDTRIM_MMAP_THRESHOLD=$M ROUNDTRIM_LOG=$LOG \\\n"
               "    %s\ndone; done; done") % (caps, thrs, gcs, lib, PY_HOOK, base)
    return "```sh\n%s\n%s\n```" % (bare, pre)


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = "unknown libc"
    return "%s, %d cores available, %s, kernel %s" % (
        model, len(os.sched_getaffinity(0)), glibc, os.uname().release)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def commit():
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return c + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def section_markdown(section, results, repeats, skipped):
    md = ["### %s" % section["title"], ""]
    if skipped:
        md += ["Not run: %s." % skipped, ""]
        return "\n".join(md)
    if section["kind"] == "native":
        md.append(
            "`tests/programs/fl_workload.c`, %d MiB model, %d rounds, %d ms pause after each "
            "round; threads T = %s. Runs per cell: %d (medians). End RSS = median over rounds "
            "%d-%d of the RSS the program prints after its pause; peak = ru_maxrss; rounds / CPU s "
            "= rounds over the process's user + system time (roundtrim's worker and its trims "
            "included); rounds / wall s = rounds over the wall time less the pauses; page faults "
            "= the process's minor faults per round."
            % (section["model_mib"], section["rounds"], section["pause_ms"],
               ", ".join(map(str, section["threads"])), repeats, section["rounds"] // 2 + 1,
               section["rounds"]))
    else:
        md.append(
            "`tests/python/fl_client.py` (torch, `torch.set_num_threads(1)`: one compute thread), "
            "width %d, %d rounds, %.2f s wait; rounds end at each return of `%s`. Runs per cell: "
            "%d (medians). End RSS = median over rounds %d-%d; CPU s = the whole process's user + "
            "system time, the import of torch included."
            % (section["width"], section["rounds"], section["wait_s"], PY_HOOK, repeats,
               section["rounds"] // 2 + 1, section["rounds"]))
    md.append("")
    for gc in section["gc"]:
        md += ["End-of-round RSS MiB, cleanup %s (`%s`):" % (gc_name(gc), GC_SETTINGS[gc]),
               "", pivot(section, results, "end", gc, 1, MIB), ""]
    for gc in section["gc"]:
        md += ["Peak RSS MiB, cleanup %s:" % gc_name(gc), "",
               pivot(section, results, "peak", gc, 1, MIB), ""]
    if section["kind"] == "native":
        for gc in section["gc"]:
            md += ["Rounds per CPU second (higher is better), cleanup %s:" % gc_name(gc), "",
                   pivot(section, results, "rounds_per_cpu_s", gc, 1), ""]
    else:
        for gc in section["gc"]:
            md += ["CPU seconds per run, cleanup %s:" % gc_name(gc), "",
                   pivot(section, results, "cpu", gc, 2), ""]
    if 1 in section["gc"]:
        md += ["Median trim per round, ms (`trim_us`), cleanup every round:", "",
               pivot(section, results, "trim_us", 1, 2, 1000.0, with_bare=False), ""]
    md += ["All cells:", "", full_table(section, results), "", "Commands (from the repository "
           "root; `$LOG` is a fresh file per run; each command ran %d times):" % repeats, "",
           loop_commands(section), ""]
    return "\n".join(md)


# --------------------------------------------------------------------------------------------


def torch_available():
    try:
        r = subprocess.run([PY, "-c", "import torch"], env=clean_env(), capture_output=True,
                           timeout=120)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small matrix, one run per cell")
    ap.add_argument("--out", metavar="FILE", help="also write the Markdown section here")
    ap.add_argument("--repeats", type=int, help="runs per cell (default 3, 1 with --quick)")
    ap.add_argument("--threads", help="comma-separated thread counts of the native matrix")
    ap.add_argument("--only", help="comma-separated sections: native, large, python")
    args = ap.parse_args()
    quick = args.quick or os.environ.get("BENCH_QUICK") == "1"
    threads = [int(x) for x in args.threads.split(",")] if args.threads else None
    only = set(args.only.split(",")) if args.only else None
    for path in (LIB, WORKLOAD):
        if not os.path.exists(path):
            sys.exit("bench_defaults: %s is missing: run make lib %s/tests/fl_workload"
                     % (rel(path), rel(BUILD_ABS)))
    sections = matrices(quick, threads, only)
    default_repeats = args.repeats or (1 if quick else 3)

    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = loadavg()
    t_start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="roundtrim-defaults-")
    parts = []
    try:
        for section in sections:
            repeats = min(section.get("repeats", default_repeats), default_repeats) \
                if args.repeats is None else args.repeats
            skipped = None
            if section["kind"] == "python" and not torch_available():
                skipped = "%s cannot import torch" % PY
            results = {}
            todo = [] if skipped else cells(section)
            n, total = 0, len(todo) * repeats
            for rep in range(repeats):
                order = list(todo)
                random.Random(rep).shuffle(order)
                for cell in order:
                    n += 1
                    t, cap, thr, gc = cell
                    what = "bare" if cap is None else "cap=%d mmap=%d gc=%d" % (cap, thr, gc)
                    print("[%s %d/%d] T=%d %s" % (section["name"], n, total, t, what),
                          file=sys.stderr, flush=True)
                    res = run_one(section, cell, tmp, n)
                    results.setdefault(cell, []).append(res)
                    for f in os.listdir(tmp):
                        os.unlink(os.path.join(tmp, f))
            parts.append(section_markdown(section, results, repeats, skipped))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.monotonic() - t_start) / 60.0
    shown_args, skip = [], False
    for a in sys.argv[1:]:  # the invocation, less where its output went
        if skip or a == "--out" or a.startswith("--out="):
            skip = a == "--out" and not skip
            continue
        shown_args.append(shlex.quote(a))
    head = [
        "## Defaults: glibc arena cap and mmap threshold",
        "",
        "Written by `bench/bench_defaults.py%s` on %s at commit %s, in %.1f minutes. Machine: "
        "%s; load average (1, 5, 15 min) %s at start, %s at end. roundtrim's settings are "
        "checked in each run's start record. glibc's own arena cap (cap 0) is 8 x cores, here "
        "%d: with 16 threads or fewer it gives every thread its own arena. The machine is shared "
        "and has few cores: wall time follows the neighbours' load, CPU time much less; read "
        "the CPU-time figures first, and the RSS figures with the range the full tables give."
        % ("".join(" " + a for a in shown_args), started.strftime("%Y-%m-%d %H:%M UTC"), commit(), minutes,
           machine(), load_start, loadavg(), 8 * (os.cpu_count() or 1)),
        "",
    ]
    text = "\n".join(head) + "\n" + "\n".join(parts)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
