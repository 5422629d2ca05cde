#!/usr/bin/python3
"""make compat: libraries and programs nobody here wrote, each run bare and with roundtrim
preloaded (cleanup every round; then with allocation sites sampled as well), whose results must be
identical. The Python programs end a round after each part of their work, so that roundtrim's gc
and trim run between the library's own calls.

Usage: run.py BUILD_DIR [CASE...]   (exit 1 when any result differs, 2 for a missing tool)"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3"  # Debian's interpreter: Debian's python3-* packages serve it


def python_case(script, module):
    return {"argv": [PYTHON, str(HERE / script)], "needs_module": module, "rounds": 3}


def openssl_speed_rows(text):
    """openssl speed's throughput differs run to run: keep which rows it measured."""
    return "\n".join(re.sub(r"[\d.]+k?", "N", l) for l in text.splitlines()
                     if l.startswith(("sha256", "aes-128-cbc", "type")))


CASES = {
    "numba": python_case("numba_jit.py", "numba"),
    "scipy": python_case("scipy_work.py", "scipy"),
    "scikit-learn": python_case("sklearn_fit.py", "sklearn"),
    "pandas": python_case("pandas_frames.py", "pandas"),
    "h5py": python_case("h5py_file.py", "h5py"),
    "pytorch": python_case("torch_train.py", "torch"),
    "grpc": python_case("grpc_roundtrip.py", "grpc"),
    "openssl-speed": {"argv": ["openssl", "speed", "-seconds", "1", "-bytes", "16384",
                               "sha256", "aes-128-cbc"],
                      "needs_tool": "openssl", "normalize": openssl_speed_rows},
    "openssl-dgst-enc": {"argv": ["sh", "-c",
                                  "head -c 3000000 /dev/zero | openssl dgst -sha512 && "
                                  "head -c 3000000 /dev/zero | openssl enc -aes-256-cbc "
                                  "-K 000102030405060708090a0b0c0d0e0f000102030405060708090a0b"
                                  "0c0d0e0f -iv 000102030405060708090a0b0c0d0e0f | "
                                  "openssl dgst -sha256"],
                         "needs_tool": "openssl"},
    "sqlite": {"argv": ["sqlite3", ":memory:"], "stdin": HERE / "sqlite.sql",
               "needs_tool": "sqlite3"},
    "c++-bad_alloc": {"argv": ["{build}/compat/bad_alloc"]},
}

MODES = {
    "bare": None,
    "cleanup": {"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_ADAPTIVE": "false"},
    "sites": {"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_SITES": "true",
              "ROUNDTRIM_SITES_SAMPLE": "65536"},
}


def environment(build, mode, log):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_")) and k != "LD_PRELOAD"}
    env["PYTHONPATH"] = str(HERE)
    env["OMP_NUM_THREADS"] = "1"
    if MODES[mode] is not None:
        env["LD_PRELOAD"] = str(build / "libroundtrim.so")
        env["ROUNDTRIM_LOG"] = str(log)
        env.update(MODES[mode])
    return env


def run_case(build, case, mode, workdir):
    log = workdir / f"{mode}.jsonl"
    argv = [a.replace("{build}", str(build)) for a in case["argv"]]
    stdin = open(case["stdin"], "rb") if "stdin" in case else subprocess.DEVNULL
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, env=environment(build, mode, log), stdin=stdin,
                              capture_output=True, timeout=300, cwd=workdir)
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    out = proc.stdout.decode(errors="replace")
    if "normalize" in case:
        out = case["normalize"](out)
    records = []
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass
    return {"rc": proc.returncode, "out": out, "err": proc.stderr.decode(errors="replace"),
            "records": records, "seconds": time.monotonic() - start}


def check_log(case, res):
    """What the preloaded run shows: the loader preloaded roundtrim (it says so on stderr when
    it cannot), and where the program ends rounds (the Python programs end 3), the log has them.
    A program without rounds writes no log."""
    if "cannot be preloaded" in res["err"]:
        return "roundtrim was not preloaded: " + res["err"][-300:]
    if not case.get("rounds"):
        return None
    starts = [r for r in res["records"] if r.get("event") == "start"]
    if not starts:
        return "no start record: roundtrim did not run in the program"
    main = starts[0]["pid"]
    rounds = [r for r in res["records"] if r.get("event") == "round" and r.get("pid") == main
              and r.get("source") != "exit"]
    want = case.get("rounds")
    if want and len(rounds) < want:
        return f"{len(rounds)} round records, {want} wanted"
    return None


def available(case):
    module = case.get("needs_module")
    if module:
        probe = subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True)
        if probe.returncode != 0:
            return f"python3 module {module} is missing"
    tool = case.get("needs_tool")
    if tool and not shutil.which(tool):
        return f"{tool} is missing"
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = Path(argv[1]).resolve()
    names = argv[2:] or list(CASES)
    failures, missing, rows = 0, 0, []
    with tempfile.TemporaryDirectory(prefix="roundtrim-compat-") as tmp:
        for name in names:
            case = CASES[name]
            why = available(case)
            if why:
                rows.append((name, f"MISSING ({why})", ""))
                missing += 1
                continue
            workdir = Path(tmp) / name
            workdir.mkdir()
            results = {mode: run_case(build, case, mode, workdir) for mode in MODES}
            bare = results["bare"]
            problems = []
            if bare["rc"] != 0:
                problems.append(f"bare run failed (rc {bare['rc']}): {bare['err'][-300:]}")
            for mode in MODES:
                if mode == "bare":
                    continue
                res = results[mode]
                if (res["rc"], res["out"]) != (bare["rc"], bare["out"]):
                    problems.append(f"{mode}: rc {res['rc']} (bare {bare['rc']}), output "
                                    f"{'same' if res['out'] == bare['out'] else 'differs'}: "
                                    f"{res['out'][-200:]!r} vs {bare['out'][-200:]!r} "
                                    f"{res['err'][-300:]}")
                bad_log = check_log(case, res)
                if bad_log:
                    problems.append(f"{mode}: {bad_log}")
            seconds = " ".join(f"{m} {results[m]['seconds']:.1f}s" for m in MODES)
            rows.append((name, "same" if not problems else "DIFFERS", seconds))
            for p in problems:
                print(f"compat {name}: {p}", file=sys.stderr)
            failures += bool(problems)
    width = max(len(r[0]) for r in rows)
    print(f"{'program':<{width}}  result  (wall time: {', '.join(MODES)})")
    for name, result, seconds in rows:
        print(f"{name:<{width}}  {result}  {seconds}")
    summary = (f"compat: {len(rows) - failures - missing} programs same bare and preloaded, "
               f"{failures} differ, {missing} missing")
    print(summary)
    (build / "compat-results.txt").write_text(summary + "\n")
    if failures:
        return 1
    return 2 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
