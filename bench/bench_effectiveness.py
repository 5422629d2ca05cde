"""Sections 3 of make bench (native, python): RSS per round over >= 30 rounds of the native
FL-like workload and of the PyTorch FL-like client, for every way users have to keep RSS down."""

import json
import os
import subprocess
import threading
import time

from bench_common import (  # noqa: E402
    COMMANDS,
    JEMALLOC,
    JEMALLOC_CONF,
    LIB,
    MIB,
    PY,
    PY_CLIENT,
    PY_HOOK,
    ROOT,
    clean_env,
    fmt,
    have_jemalloc,
    md_table,
    median,
    pct,
    prog,
    read_log,
    render_command,
    short_path)
from roundtrim_report import stats as roundtrim_stats  # noqa: E402


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
