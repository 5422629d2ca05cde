#!/usr/bin/python3
"""CPython's own test suite, wide: each module of tests/cpython/modules.txt in a process of its
own, without roundtrim and preloaded with it, and the verdicts compared.

Configurations (the -X dev ones run `python3 -X dev -m test ...`):

  bare        no preload
  rt          LD_PRELOAD=libroundtrim.so, default settings (no log)
  rt-rounds   LD_PRELOAD, cleanup every round (NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1), a timer round
              every ROUNDTRIM_INTERVAL_S=1 second (the shortest the library accepts: the
              variable is whole seconds), memory samples every ROUNDTRIM_SAMPLE_MS=100 ms, and a
              round log per process (ROUNDTRIM_LOG=<out>/logs/<config>/<module>/%p.jsonl)
  dev, dev-rt, dev-rt-rounds   the same three under -X dev

Every process the tests start inherits the environment, so LD_PRELOAD too. Each module runs as
`python3 -m test -w --fail-env-changed --timeout T --junit-xml F MODULE` in a new session
(process group); past T + 150 s (regrtest's own exit watchdog is 120 s) the whole group is
killed. Verdicts: pass, fail, skip, env-changed, no-tests, timeout, crash:SIGNAME, error:RC;
`pass*` is a module that passed only on regrtest's re-run (-w) of its failed tests; a suffix
`+exit:SIGNAME` / `+exit-hang` / `+exit:rc=N` says the process did not end as its verdict says
(killed by a signal, hung at exit, an exit status that does not match the verdict). Each
preloaded configuration is compared with the bare one of the same -X mode.

The exit status is 1 when some module's verdict or exit differs from its baseline in any way
(whether or not it looks like a defect of KNOWN below), else 0. Results stay in
OUT/runs/<config>/<module>.{json,out,xml} and a run that is already there is not
repeated (--force repeats it; a preloaded run is repeated when the library's sha256 changed), so
an interrupted comparison resumes where it stopped; the table is written to OUT/table.md and
printed.

    nice -n 10 tests/cpython/compare.py                      # everything (2 at a time)
    tests/cpython/compare.py -c bare,rt test_mmap test_gc    # some modules, some configurations
    tests/cpython/compare.py --table-only                    # the table of what OUT holds
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from live_threads import group_processes  # noqa: E402

CONFIGS = {
    "bare": {"dev": False, "preload": False, "env": {}},
    "rt": {"dev": False, "preload": True, "env": {}},
    "rt-rounds": {"dev": False, "preload": True, "log": True,
                  "env": {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "1", "ROUNDTRIM_INTERVAL_S": "1",
                          "ROUNDTRIM_SAMPLE_MS": "100"}},
    "dev": {"dev": True, "preload": False, "env": {}},
    "dev-rt": {"dev": True, "preload": True, "env": {}},
    "dev-rt-rounds": {"dev": True, "preload": True, "log": True,
                      "env": {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "1", "ROUNDTRIM_INTERVAL_S": "1",
                              "ROUNDTRIM_SAMPLE_MS": "100"}},
}
BASELINE = {"rt": "bare", "rt-rounds": "bare", "dev-rt": "dev", "dev-rt-rounds": "dev"}
EXIT_WATCHDOG = 150  # regrtest's EXIT_TIMEOUT (120 s) and a margin
SCRUB = ("LD_PRELOAD", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "PYTHONMALLOC", "PYTHONDEVMODE",
         "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONFAULTHANDLER",
         "PYTHONTRACEMALLOC", "PYTHONASYNCIODEBUG", "PYTHONUNBUFFERED")

# Lines of the output worth naming in the table: roundtrim's own words and known failure marks.
MARKS = [
    ("bad-ID", re.compile(r"_PyMem_DebugRawFree: bad ID|Debug memory block at address")),
    ("fatal", re.compile(r"^Fatal Python error: (.*)$", re.M)),
    ("roundtrim", re.compile(r"^roundtrim: .*$", re.M)),
    ("timeout-traceback", re.compile(r"^Timeout \(\d+:\d\d:\d\d\)!$", re.M)),
    ("leftover", re.compile(r"^# leftover processes", re.M)),
]
CASE_RE = re.compile(r"^(FAIL|ERROR): (\S+) \(([\w.]+)\)", re.M)
BLOCK_RE = re.compile(r"^(?:FAIL|ERROR): \S+ \(([\w.]+)\)\n-{70}\n(.*?)(?=^={70}$|^-{70}$)",
                      re.M | re.S)
# Defects this comparison found in roundtrim, all fixed since: a difference that looks like one of
# them is named after it (a regression), and still counts as a difference.
KNOWN = [
    ("debug-alloc-abort", "the debug allocator (-X dev, PYTHONMALLOC=debug) aborts at exit: "
     "_PyMem_DebugRawFree: bad ID", re.compile(r"_PyMem_DebugRawFree: bad ID|bad ID: Allocated")),
    ("setsigdef", "a child that raises SIGUSR1 with no handler gets a round instead of dying",
     re.compile(r"test_setsigdef")),
    ("last-thread-hang", "a process whose last thread of its own ended stays alive with "
     "roundtrim's threads only (pthread_exit from main, a Python child forked from a thread)",
     re.compile(r"^# \d+ \S+ threads=roundtrim[\w-]*(?:,roundtrim[\w-]*)* ", re.M)),
]


def read_modules(path):
    """modules.txt: `[group] reason` starts a group; then one module a line, optionally
    `timeout=SECONDS`; # starts a comment."""
    modules, group = [], None
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            group = line[1:line.index("]")]
            continue
        words = line.split()
        opts = dict(w.split("=", 1) for w in words[1:])
        m = {"name": words[0], "test": words[0], "group": group,
             "timeout": int(opts.get("timeout", 0)) or None, "ignore": opts.get("ignore"),
             "use": opts.get("use"), "python": opts.get("python")}
        if m["python"]:
            ver = subprocess.run([m["python"], "-c", "import sys; print('%d.%d' % "
                                  "sys.version_info[:2])"], capture_output=True, text=True)
            m["name"] += "@" + (ver.stdout.strip() or "missing")
        modules.append(m)
    return modules


def run_env(args, config, module, out):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_")) and k not in SCRUB}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    cfg = CONFIGS[config]
    if cfg["preload"]:
        env["LD_PRELOAD"] = str(args.lib)
        env.update(cfg["env"])
        if cfg.get("log"):
            logdir = out / "logs" / config / module
            logdir.mkdir(parents=True, exist_ok=True)
            env["ROUNDTRIM_LOG"] = str(logdir / "%p.jsonl")
    tmp = out / "tmp" / config / module
    tmp.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(tmp)
    return env, tmp


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def group_members(pgid):
    """'pid state threads=... cmdline' of each process of the group that still runs."""
    found = []
    for pid, state, threads in group_processes(pgid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        found.append(f"{pid} {state} threads={','.join(threads)} {cmd[:200]}")
    return found


def signame(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


def verdict_of(text, rc, killed):
    """(verdict, detail) from regrtest's output and the exit status."""
    results = re.findall(r"^== Tests result: (.*) ==$", text, re.M)
    last = results[-1] if results else None
    after = text[text.rindex("== Tests result:"):] if results else ""
    if last is None:
        if killed:
            return "timeout", "killed by the runner"
        if re.search(r"^Timeout \(\d+:\d\d:\d\d\)!$", text, re.M):
            return "timeout", "regrtest's watchdog"
        if rc < 0:
            return f"crash:{signame(-rc)}", ""
        return f"error:{rc}", ""
    first, _, final = last.rpartition(" then ")
    base = {"SUCCESS": "pass", "FAILURE": "fail", "ENV CHANGED": "env-changed",
            "NO TEST RUN": "no-tests", "INTERRUPTED": "interrupted"}.get(final, final.lower())
    if base == "pass":
        if re.search(r"^\d+ tests? skipped:", after, re.M) and not re.search(
                r"^\d+ tests? OK\.", after, re.M):
            base = "skip"
        elif re.search(r"^\d+ tests? run no tests:", after, re.M):
            base = "no-tests"
        elif "FAILURE" in first:
            base = "pass*"
    expected = {"pass": 0, "pass*": 0, "skip": 0, "fail": 2, "env-changed": 3,
                "no-tests": 0, "interrupted": 130}.get(base)
    if killed:
        base += "+exit-hang"
    elif rc < 0:
        base += f"+exit:{signame(-rc)}"
    elif re.search(r"^Timeout \(\d+:\d\d:\d\d\)!$", after, re.M):
        base += "+exit-hang"
    elif expected is not None and rc != expected:
        base += f"+exit:rc={rc}"
    return base, last


def junit_counts(xml_path):
    """(tests, failures+errors, skipped, [failing case ids]) from regrtest's JUnit file."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    tests = fails = skipped = 0
    bad = []
    for case in root.iter("testcase"):
        tests += 1
        name = ".".join(x for x in (case.get("classname"), case.get("name")) if x)
        if case.find("failure") is not None or case.find("error") is not None:
            fails += 1
            bad.append(name)
        elif case.find("skipped") is not None:
            skipped += 1
    return {"tests": tests, "failed": fails, "skipped": skipped, "failing": sorted(set(bad))}


def log_summary(logdir):
    """Processes that wrote a round log, round records, cleanups, and exit records."""
    procs = rounds = cleanups = exits = bad_lines = 0
    if not logdir.is_dir():
        return None
    for f in logdir.glob("*.jsonl"):
        procs += 1
        for line in f.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                bad_lines += 1
                continue
            ev = rec.get("event")
            if ev == "round":
                rounds += 1
                if rec.get("cleanup"):
                    cleanups += 1
            elif ev == "exit":
                exits += 1
    return {"processes": procs, "rounds": rounds, "cleanups": cleanups, "exits": exits,
            "bad_lines": bad_lines}


def run_one(args, out, module, config):
    rundir = out / "runs" / config
    rundir.mkdir(parents=True, exist_ok=True)
    res_path = rundir / f"{module['name']}.json"
    if res_path.exists() and not args.force:
        old = json.loads(res_path.read_text())
        # a preloaded run of another build of the library is run again
        if not CONFIGS[config]["preload"] or old.get("lib_sha256") == args.lib_sha256:
            return old
    timeout = module["timeout"] or args.timeout
    env, tmp = run_env(args, config, module["name"], out)
    xml_path = rundir / f"{module['name']}.xml"
    out_path = rundir / f"{module['name']}.out"
    for stale in (xml_path,):
        if stale.exists():
            stale.unlink()
    argv = [module.get("python") or args.python] + (
        ["-X", "dev"] if CONFIGS[config]["dev"] else []) + [
        "-m", "test", "-w", "--fail-env-changed", "--timeout", str(timeout),
        "--junit-xml", str(xml_path)]
    if module.get("ignore"):
        argv += ["-i", module["ignore"]]
    if module.get("use"):
        argv += ["-u", module["use"]]
    argv.append(module.get("test") or module["name"])
    start = time.monotonic()
    killed = False
    with open(out_path, "wb") as fout:
        fout.write(("# " + " ".join(f"{k}={v}" for k, v in sorted(env.items())
                                    if k.startswith(("LD_PRELOAD", "ROUNDTRIM_", "NVFLARE_")))
                    + " " + " ".join(argv) + "\n").encode())
        fout.flush()
        proc = subprocess.Popen(argv, env=env, cwd=tmp, stdout=fout, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout + EXIT_WATCHDOG)
        except subprocess.TimeoutExpired:
            killed = True
            leftover = group_members(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            fout.write(("\n# killed by the runner after %d s; the group held:\n# %s\n"
                        % (timeout + EXIT_WATCHDOG, "\n# ".join(leftover))).encode())
        wall = time.monotonic() - start
        # what the module left running in its process group
        time.sleep(0.5)
        leftover = group_members(proc.pid) if not killed and group_alive(proc.pid) else []
        if leftover:
            fout.write(("\n# leftover processes in the group after exit:\n# %s\n"
                        % "\n# ".join(leftover)).encode())
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    text = out_path.read_text(errors="replace")
    verdict, detail = verdict_of(text, rc, killed)
    marks = []
    for name, rx in MARKS:
        m = rx.search(text)
        if m:
            marks.append(name if name not in ("fatal", "roundtrim") else m.group(0)[:160])
    res = {"module": module["name"], "group": module["group"], "config": config,
           "verdict": verdict, "detail": detail, "rc": rc, "wall_s": round(wall, 1),
           "marks": marks, "cases": CASE_RE.findall(text)[:50],
           "junit": junit_counts(xml_path), "blocks": case_blocks(text),
           "lib_sha256": args.lib_sha256 if CONFIGS[config]["preload"] else None}
    if CONFIGS[config].get("log"):
        res["log"] = log_summary(out / "logs" / config / module["name"])
    subprocess.run(["rm", "-rf", str(tmp)], check=False)
    res_path.write_text(json.dumps(res, indent=1))
    return res


# A test that saw a child die of SIGABRT, in an output where the debug allocator's abort shows
ABORTED_CHILD = re.compile(r"(?<![\w.])-6 (?:!=|not found in)|return code is -6|exit(?:ed with)? code -6|"
                           r"exitcode[= ]+-6|Signals.SIGABRT|-SIGABRT")


def case_blocks(text):
    """{test id: known-defect keys its traceback matches ([] when none)}, for every failing test
    case of the output (regrtest's re-run included)."""
    found = {}
    bad_id = KNOWN[0][2].search(text)
    for m in BLOCK_RE.finditer(text):
        block = m.group(1) + "\n" + m.group(2)
        keys = [k for k, _, rx in KNOWN if rx.search(block)]
        if not keys and bad_id and ABORTED_CHILD.search(block):
            keys = [KNOWN[0][0]]
        found.setdefault(m.group(1), set()).update(keys)
    return {k: sorted(v) for k, v in found.items()}


def explain(r, b, text):
    """Known-defect keys that account for a difference, and whether anything is left over."""
    blocks = case_blocks(text)
    keys, unexplained = set(), []
    for case in sorted(failing_cases(r) - failing_cases(b)):
        ks = blocks.get(case, [])
        keys.update(ks)
        if not ks:
            unexplained.append(case)
    if "+exit" in r["verdict"] and "+exit" not in b["verdict"]:
        ks = [k for k, _, rx in KNOWN if rx.search(text[-20000:])]
        keys.update(ks)
        if not ks:
            unexplained.append("(the exit)")
    if core(r["verdict"]) != core(b["verdict"]) and not (failing_cases(r) - failing_cases(b)):
        ks = [k for k, _, rx in KNOWN if rx.search(text)] if core(r["verdict"]) == "timeout" \
            else []
        keys.update(ks)
        if not ks:
            unexplained.append("(the verdict: no failing test of its own)")
    return sorted(keys), unexplained


def core(verdict):
    """The verdict of the tests, without what the process did at exit."""
    return verdict.split("+", 1)[0]


def failing_cases(res):
    if res.get("junit") and res["junit"]["failing"]:
        return set(res["junit"]["failing"])
    return {f"{c[2]}.{c[1]}" for c in res.get("cases", [])}


def compare_table(out, modules, configs):
    results = {}
    for config in configs:
        for m in modules:
            p = out / "runs" / config / f"{m['name']}.json"
            if p.exists():
                results[(m["name"], config)] = json.loads(p.read_text())
    kinds = ["pass", "pass*", "skip", "fail", "env-changed", "timeout", "other"]
    # every preloaded run against its baseline: (kind, known keys, what is left unexplained)
    diffs = {}
    for (name, config), r in results.items():
        base = BASELINE.get(config)
        b = results.get((name, base))
        if not b or b["verdict"] == r["verdict"]:
            continue
        kind = "verdict" if core(b["verdict"]) != core(r["verdict"]) else "exit"
        text = (out / "runs" / config / (name + ".out")).read_text(errors="replace")
        keys, unexplained = explain(r, b, text)
        diffs[(name, config)] = (kind, keys, unexplained)

    lines = ["## Totals", "",
             "| configuration | modules | " + " | ".join(kinds) + " | verdict differs (not "
             "put down to a known defect) | only the exit differs (not put down) | wall, sum "
             "of modules |", "|---" * (len(kinds) + 5) + "|"]
    for config in configs:
        counts = dict.fromkeys(kinds, 0)
        n, wall = 0, 0.0
        nd = [0, 0]
        nx = [0, 0]
        for m in modules:
            r = results.get((m["name"], config))
            if not r:
                continue
            n += 1
            wall += r["wall_s"]
            c = core(r["verdict"])
            counts[c if c in counts else "other"] += 1
            d = diffs.get((m["name"], config))
            if d:
                acc = nd if d[0] == "verdict" else nx
                acc[0] += 1
                acc[1] += bool(d[2])
        cells = (f"{nd[0]} ({nd[1]}) | {nx[0]} ({nx[1]})" if config in BASELINE else "- | -")
        lines.append(f"| {config} | {n} | " + " | ".join(str(counts[k]) for k in kinds) +
                     f" | {cells} | {wall / 60:.1f} min |")
    lines += ["", "## Modules that differ from the baseline (bare, or dev for -X dev)", "",
              "Listed: a module whose tests' verdict differs in some configuration (**bold**), "
              "or whose exit differs for a reason not put down to a known defect (_italic_). "
              "A cell marked ~ differs only at exit, for a known defect.", "",
              "| module | " + " | ".join(configs) + " |", "|---" * (len(configs) + 1) + "|"]
    listed = []
    for m in modules:
        mine = {c: diffs[(m["name"], c)] for c in configs if (m["name"], c) in diffs}
        if not any(d[0] == "verdict" or d[2] for d in mine.values()):
            continue
        listed.append(m["name"])
        cells = []
        for config in configs:
            r = results.get((m["name"], config))
            d = mine.get(config)
            if not r:
                cells.append("")
            elif not d:
                cells.append(r["verdict"])
            elif d[0] == "verdict":
                cells.append(f"**{r['verdict']}**")
            elif d[2]:
                cells.append(f"_{r['verdict']}_")
            else:
                cells.append(f"~{r['verdict']}")
        lines.append(f"| {m['name']} | " + " | ".join(cells) + " |")
    compact = {}
    for (name, config), d in diffs.items():
        if d[0] == "exit" and not d[2] and name not in listed:
            compact.setdefault(", ".join(d[1]) or "?", {}).setdefault(config, []).append(name)
    lines.append("")
    for keys, per in compact.items():
        for config, names in sorted(per.items()):
            lines.append(f"Only the exit differs, put down to {keys}: {len(names)} more modules "
                         f"in {config} ({', '.join(sorted(names)[:6])}"
                         + (", ..." if len(names) > 6 else "") + ")")
    lines += ["", "## Details", "",
              "Known defects: " + "; ".join(f"{k}: {d}" for k, d, _ in KNOWN), ""]
    for m in modules:
        for config in configs:
            d = diffs.get((m["name"], config))
            if not d or (d[0] == "exit" and not d[2]):
                continue
            r, b = results[(m["name"], config)], results[(m["name"], BASELINE[config])]
            why = ", ".join("known: " + k for k in d[1])
            if d[2]:
                why = (why + "; " if why else "") + "NOT EXPLAINED: " + ", ".join(d[2][:8])
            lines.append(f"- {m['name']} [{config}]: {b['verdict']} -> {r['verdict']}"
                         f" (rc {b['rc']} -> {r['rc']}); {why}; marks: "
                         f"{', '.join(r['marks'])[:200] or '-'}")
            new = sorted(failing_cases(r) - failing_cases(b))
            gone = sorted(failing_cases(b) - failing_cases(r))
            if new:
                lines.append(f"  - fails only here: {', '.join(new[:12])}"
                             + (" ..." if len(new) > 12 else ""))
            if gone:
                lines.append(f"  - fails only in the baseline: {', '.join(gone[:12])}")
            lines.append(f"  - output: {out / 'runs' / config / (m['name'] + '.out')}")
    lines.append("")
    flaky = [(m["name"], c) for m in modules for c in configs
             if core(results.get((m["name"], c), {}).get("verdict", "")) == "pass*"]
    if flaky:
        lines.append("Passed only on regrtest's re-run (pass*): " +
                     ", ".join(f"{n} [{c}]" for n, c in flaky))
    logs = [r["log"] for r in results.values() if r.get("log")]
    if logs:
        tot = {k: sum(lg[k] for lg in logs) for k in ("processes", "rounds", "cleanups")}
        lines.append(f"Round logs of the rt-rounds configurations: {tot['processes']} processes "
                     f"wrote logs, {tot['rounds']} round records, {tot['cleanups']} with a "
                     "cleanup.")
    return "\n".join(lines) + "\n", bool(diffs)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help="modules to run (default: all of --list)")
    ap.add_argument("--list", default=str(HERE / "modules.txt"))
    ap.add_argument("-c", "--configs", default=",".join(CONFIGS))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="per module, seconds")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--lib", default=str(ROOT / "build" / "libroundtrim.so"))
    ap.add_argument("--out", default=os.environ.get("CPYTHON_WIDE_OUT", "/tmp/roundtrim-wide"))
    ap.add_argument("--force", action="store_true", help="run again what OUT already holds")
    ap.add_argument("--table-only", action="store_true")
    args = ap.parse_args()
    args.lib = Path(args.lib).resolve()
    args.lib_sha256 = (hashlib.sha256(args.lib.read_bytes()).hexdigest()
                       if args.lib.exists() else None)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c}")
    all_modules = read_modules(args.list)
    if args.modules:
        known = {m["name"]: m for m in all_modules}
        modules = [known.get(n, {"name": n, "test": n, "group": None, "timeout": None})
                   for n in args.modules]
    else:
        modules = all_modules
    if not args.table_only:
        if any(CONFIGS[c]["preload"] for c in configs) and not args.lib.exists():
            sys.exit(f"{args.lib} is missing: make lib")
        jobs = [(m, c) for m in modules for c in configs]
        lock = threading.Lock()
        done = [0]
        t0 = time.monotonic()

        def task(mc):
            res = run_one(args, out, *mc)
            with lock:
                done[0] += 1
                print(f"[{done[0]}/{len(jobs)} {time.monotonic() - t0:6.0f}s] "
                      f"{res['module']:40} {res['config']:14} {res['verdict']:18}"
                      f" {res['wall_s']:6.1f}s {' '.join(res['marks'])[:80]}", flush=True)
            return res

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
            for f in [ex.submit(task, mc) for mc in jobs]:
                f.result()
        print(f"# {len(jobs)} runs in {(time.monotonic() - t0) / 60:.1f} min", flush=True)
    table, differing = compare_table(out, modules, configs)
    (out / "table.md").write_text(table)
    print(table)
    # 1 when any module differs from its baseline
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
