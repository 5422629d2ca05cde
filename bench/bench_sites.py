"""Section 5 of make bench: allocation sites. Instructions per pair against a counting floor
(an interposer of our own), sampling off and on against the bare process and heaptrack on three
workloads, and whether each tool names a planted leak, after how many rounds."""

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

from bench_common import (  # noqa: E402
    BUILD,
    COMMANDS,
    LIB,
    MIB,
    PY,
    PY_CLIENT,
    ROOT,
    allocator_env,
    callgrind_run,
    callgrind_total,
    dpkg_version,
    fmt,
    have_jemalloc,
    md_table,
    median,
    pct,
    plural,
    prog,
    read_log,
    render_command,
    run,
    short_path)
from roundtrim_report import sites as roundtrim_sites  # noqa: E402


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
