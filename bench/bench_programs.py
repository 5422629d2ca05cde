"""Section 7 of make bench: whole programs, the instructions of gcc, git and Python over every
process they start, as ratios to bare."""

import os

from bench_common import PY, md_table  # noqa: E402
from bench_startup import HASHED, PY_JSON, callgrind_tree, program_variants  # noqa: E402


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
