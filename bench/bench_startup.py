"""Section 6 of make bench: start-up, instructions and wall time of /bin/true and python3 -c
pass, bare, with an empty preload, the counting floor, roundtrim and jemalloc, and where
roundtrim's go."""

import os
import subprocess
import time

from bench_common import (  # noqa: E402
    ANNOTATE_LINE,
    BUILD,
    COMMANDS,
    JEMALLOC,
    LIB,
    PY,
    ROOT,
    callgrind_functions,
    callgrind_run,
    callgrind_total,
    clean_env,
    have_jemalloc,
    md_table,
    median,
    run_env)
from bench_sites import FLOOR  # noqa: E402


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
