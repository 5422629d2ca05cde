#!/usr/bin/python3
"""The diagnosis corpus: programs with one known behaviour each, the truth in each file's
header, run under the preloaded library with its defaults; each process's own last diagnosis
record must say that truth, and `roundtrim report --json` must compute the same verdict from the
round records alone (the process's diagnosis and exit records taken out, as for a process ended
by a signal).

    run.py --lib build/libroundtrim.so --build build [--load N] [-j J] [NAME ...]

Header lines (comments at the top of each program):
    truth: CAUSE          the cause the diagnosis must give (none, leak, fragmentation,
                          cuda_cache, outside_heap)
    expect: WORD ...      more it must say: held=gc|trim|device, finding=NAME, mixed
    env: NAME=VALUE ...   settings of this program (@FAKECUDA@ names the stand-in driver)
    needs: MODULE ...     Python modules it imports beyond the standard library (numpy, torch):
                          without them the program is left out, and the table says so

A program whose truth is none or unsure must not have been called a cause of growth by any
earlier (periodic) diagnosis either: that is what the fleet's leak alert reads.
Prints the confusion table (rows: truth, columns: cause given) and every miss; exits 1 on any.
--load N runs N busy processes beside the corpus (the truth must hold under load).
Rounds are tens of milliseconds, so the cleanup budget (a share of round time meant for rounds
of seconds) is off: ROUNDTRIM_CLEANUP_BUDGET=0. Two programs run at a time (-j), their math
libraries on one thread each.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from roundtrim_report import diagnosis as report_diagnosis  # noqa: E402  (its reading of advice)

PYTHON = "/usr/bin/python3"
CAUSES = ["none", "leak", "fragmentation", "cuda_cache", "outside_heap", "unsure", "other"]


def header(path):
    """{truth, expect: [...], env: {...}} from the file's leading comment lines."""
    spec = {"truth": None, "expect": [], "env": {}, "needs": []}
    for line in path.read_text().splitlines()[:12]:
        m = re.match(r"^\s*(?:#|/\*|\*)\s*(truth|expect|env|needs):\s*(.*?)\s*(?:\*/)?\s*$", line)
        if not m:
            continue
        key, value = m.groups()
        if key == "truth":
            spec["truth"] = value
        elif key in ("expect", "needs"):
            spec[key] += value.split()
        else:
            for item in value.split():
                name, _, val = item.partition("=")
                spec["env"][name] = val
    return spec


def programs(names):
    found = sorted(p for p in HERE.iterdir() if p.suffix in (".py", ".c")
                   and p.name not in ("run.py", "corpus_rounds.py"))
    if names:
        found = [p for p in found if p.stem in names]
    return found


def importable(module):
    return subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True,
                          timeout=120).returncode == 0


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("ROUNDTRIM_", "NVFLARE_")) and k not in (
                "LD_PRELOAD", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "PYTHONMALLOC")}


def run_one(path, args, tmp):
    spec = header(path)
    log = Path(tmp) / f"{path.stem}.jsonl"
    env = clean_env()
    env.update({"LD_PRELOAD": str(args.lib), "ROUNDTRIM_LOG": str(log), "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    if not args.budget:
        env["ROUNDTRIM_CLEANUP_BUDGET"] = "0"
    fake = str(Path(args.build) / "fakecuda")
    for k, v in spec["env"].items():
        env[k] = v.replace("@FAKECUDA@", fake)
    argv = [PYTHON, str(path)] if path.suffix == ".py" else [str(Path(args.build) / "corpus" / path.stem)]
    start = time.monotonic()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    took = time.monotonic() - start
    got = {"name": path.stem, "truth": spec["truth"], "expect": spec["expect"], "took": took,
           "rc": res.returncode, "stderr": res.stderr[-2000:], "cause": None, "record": None}
    if res.returncode != 0 or not log.exists():
        got["cause"] = "other"
        return got
    records = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    starts = [r for r in records if r.get("event") == "start"]
    pid = starts[0]["pid"] if starts else None
    diags = [r for r in records if r.get("event") == "diagnosis" and r.get("pid") == pid]
    # What the process said before its end (the periodic records the fleet alert reads).
    got["earlier"] = [d.get("cause") for d in diags[:-1]]
    if diags:
        got["record"] = diags[-1]
        got["cause"] = diags[-1].get("cause") or "other"
    # The same process ended by a signal before writing any diagnosis: the report computes it
    # from the round records, with the library's code, and must say the same.
    cut = Path(tmp) / f"{path.stem}.signalled.jsonl"
    cut.write_text("".join(json.dumps(r) + "\n" for r in records
                           if r.get("event") not in ("diagnosis", "exit")))
    rep = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", "--json", str(cut)],
                         env=clean_env(), capture_output=True, text=True, timeout=120)
    try:
        procs = json.loads(rep.stdout)["processes"]
        d = next(p["diagnosis"] for p in procs if p["pid"] == pid)
        got["report_cause"] = d.get("cause")
        got["report_same_advice"] = same_advice(d, got["record"] or {})
    except (ValueError, KeyError, StopIteration):
        got["report_cause"] = f"report failed: {rep.stderr[-300:]}"
    return got


def same_advice(computed, record):
    """Whether the report's advice is the process's. Where sampling started at the verdict and no
    sampled site grows, the report says so in place of the sentence on sites, which the record's
    advice_sites places: the rest must be the same."""
    a = computed.get("advice")
    if a == record.get("advice"):
        return True
    skipped = computed.get("sites_skipped")
    return skipped in ("no_growing_site", "too_few_sites_records") and \
        a == report_diagnosis.advice_without_sampled_sites(
            dict(record, sites_since=computed.get("sites_since")), skipped,
            computed.get("sites_records", 0))


def misses(got):
    """What the diagnosis got wrong for one program, in words (empty: right)."""
    out = []
    if got["cause"] != got["truth"]:
        out.append(f"cause {got['cause']} (truth {got['truth']})")
    if got.get("report_cause") != got["cause"] or not got.get("report_same_advice"):
        out.append(f"the report, computing it without the process's records, says "
                   f"{got.get('report_cause')}")
    if got["truth"] in ("none", "unsure"):
        alarms = [c for c in got.get("earlier", []) if c not in ("none", "unsure")]
        if alarms:
            out.append(f"an earlier diagnosis said {alarms[0]}")
    rec = got["record"] or {}
    for e in got["expect"]:
        key, _, val = e.partition("=")
        if key == "held" and not (rec.get("held") or {}).get(val):
            out.append(f"nothing held by {val}")
        elif key == "finding" and val not in (rec.get("findings") or []):
            out.append(f"no finding {val}")
        elif key == "mixed" and not rec.get("mixed"):
            out.append("not mixed")
    return out


def busy():
    return subprocess.Popen([PYTHON, "-c", "while True: pass"], env=clean_env())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, type=Path)
    ap.add_argument("--build", required=True)
    ap.add_argument("--load", type=int, default=0)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--budget", action="store_true",
                    help="keep the cleanup budget's default (short rounds: cleanups held back)")
    ap.add_argument("-v", action="store_true", help="print every diagnosis's advice")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    chosen, have = [], {}
    for path in programs(args.names):
        for m in header(path)["needs"]:
            if m not in have:
                have[m] = importable(m)
        lacking = [m for m in header(path)["needs"] if not have[m]]
        if lacking:
            print(f"left out {path.name}: {PYTHON} has no {', '.join(lacking)}")
        else:
            chosen.append(path)
    load = [busy() for _ in range(args.load)]
    try:
        with tempfile.TemporaryDirectory(prefix="roundtrim-corpus-") as tmp:
            with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
                results = list(pool.map(lambda p: run_one(p, args, tmp), chosen))
    finally:
        for p in load:
            p.kill()
            p.wait()
    table = {}
    for g in results:
        table[(g["truth"], g["cause"] if g["cause"] in CAUSES else "other")] = \
            table.get((g["truth"], g["cause"] if g["cause"] in CAUSES else "other"), 0) + 1
    truths = [c for c in CAUSES if any(t == c for t, _ in table)]
    cols = [c for c in CAUSES if any(k == c for _, k in table) or c in truths]
    print(f"diagnosis corpus: {len(results)} programs" + (f", {args.load} busy processes beside"
                                                         if args.load else ""))
    print("truth \\ given  " + " ".join(f"{c:>13}" for c in cols))
    for t in truths:
        print(f"{t:<14} " + " ".join(f"{table.get((t, c), 0):>13}" for c in cols))
    bad = 0
    for g in results:
        wrong = misses(g)
        if wrong or args.v:
            rec = g["record"] or {}
            print(f"{'MISS' if wrong else 'ok  '} {g['name']}: {'; '.join(wrong) or g['cause']}"
                  f" ({g['took']:.1f} s, rc {g['rc']})")
            if rec:
                print(f"     {rec.get('advice', '')}")
            elif g["stderr"]:
                print(f"     {g['stderr'].strip()[-500:]}")
        bad += bool(wrong)
    print(f"{len(results) - bad} of {len(results)} right")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
