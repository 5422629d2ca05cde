"""`roundtrim report --png`: RSS (before and after the cleanup, peak), the live heap, the
cgroup's memory use and device memory per round, one panel per process (at most MAX_PANELS),
with the cleanup rounds and the memory-pressure events marked. The cgroup's use gets an axis of
its own when it would flatten the process's lines.

The plot is drawn with matplotlib when it is installed (Debian: python3-matplotlib), else with
gnuplot (Debian: gnuplot-nox). ROUNDTRIM_PLOTTER=matplotlib|gnuplot|none picks one by hand."""

import importlib.util
import math
import os
import shutil
import subprocess
import sys
import tempfile

from . import text as roundtrim_text
from .common import MIB, PROG, mib_or_none
from .fields import PRESSURE_CLEAN, PRESSURE_WARN
from .trends import rss_trend

MAX_PANELS = 6

# (record key, legend label, matplotlib style, gnuplot style)
SERIES = [
    ("rss_before", "RSS before cleanup", dict(color="#1f77b4", marker="o", ms=3, lw=1.6),
     "lc rgb '#1f77b4' lw 2 pt 7 ps 0.5"),
    ("rss_after", "RSS after cleanup", dict(color="#2ca02c", marker="o", ms=3, lw=1.6),
     "lc rgb '#2ca02c' lw 2 pt 7 ps 0.5"),
    ("rss_peak", "peak RSS in the round", dict(color="#d62728", ls="--", lw=1.2),
     "lc rgb '#d62728' lw 1.5 dt 2"),
    ("heap_live", "heap live", dict(color="#ff7f0e", ls=":", lw=1.8),
     "lc rgb '#ff7f0e' lw 2 dt 3"),
    ("cgroup_usage", "cgroup memory use", dict(color="#7f7f7f", ls="-.", lw=1.2),
     "lc rgb '#7f7f7f' lw 1.5 dt 4"),
    ("device_held", "device memory held", dict(color="#9467bd", marker="s", ms=3, lw=1.6),
     "lc rgb '#9467bd' lw 2 pt 5 ps 0.5"),
]

PRESSURE_COLORS = {PRESSURE_WARN: "#e6a100", PRESSURE_CLEAN: "#b00020"}

# The cgroup's use gets an axis of its own when it is this many times the process's highest
# line: a cgroup shared with other processes (GiB against MiB) would flatten every other line.
CGROUP_OWN_AXIS_RATIO = 4.0
CGROUP_RIGHT = " (right axis)"


def cgroup_ratio(proc):
    """The cgroup's highest memory use over the process's highest line, or None."""
    cgroup = (mib_or_none(r.get("cgroup_usage")) for r in proc.rounds)
    cgroup = max((v for v in cgroup if v is not None), default=None)
    own = (mib_or_none(r.get(key)) for r in proc.rounds for key, *_ in SERIES
           if key != "cgroup_usage")
    own = max((v for v in own if v is not None), default=None)
    if cgroup is None or own is None or own <= 0:
        return None
    return cgroup / own


def cgroup_on_own_axis(proc):
    """Whether the cgroup's memory use is drawn on an axis of its own (right)."""
    ratio = cgroup_ratio(proc)
    return ratio is not None and ratio > CGROUP_OWN_AXIS_RATIO


def panel_title(proc):
    title = f"process {proc.pid}"
    if proc.role:
        title += f" ({proc.role})"
    if proc.exe:
        title += f": {os.path.basename(str(proc.exe))}"
    trend = rss_trend(proc.rounds, "rss_after")
    if trend is not None:
        first, last, per = trend
        title += f"  |  RSS after: {per / MIB:+.2f} MiB/round, rounds {first}-{last}"
    return title


def pressure_x(proc, p):
    """Where a pressure event sits on the round axis: between the rounds around it."""
    ts = p.get("ts")
    pts = [(r.get("ts"), r.get("round")) for r in proc.rounds]
    pts = [(t, n) for t, n in pts if isinstance(t, (int, float)) and isinstance(n, int)]
    if not isinstance(ts, (int, float)) or not pts:
        return None
    before = [(t, n) for t, n in pts if t <= ts]
    after = [(t, n) for t, n in pts if t > ts]
    if before and after:
        (t0, n0), (t1, n1) = before[-1], after[0]
        return n0 + (n1 - n0) * (ts - t0) / (t1 - t0) if t1 > t0 else n0
    if after:
        return after[0][1] - 0.5
    return before[-1][1] + 0.5


def plot_matplotlib(procs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    text = roundtrim_text.matplotlib_plain(matplotlib)  # the log's names: no mathtext
    fig, axes = plt.subplots(len(procs), 1, figsize=(11, 4.6 * len(procs)), squeeze=False)
    for ax, proc in zip(axes[:, 0], procs):
        xs = [r.get("round") for r in proc.rounds]
        top = 0.0
        right = ax.twinx() if cgroup_on_own_axis(proc) else None
        for key, label, style, _ in SERIES:
            ys = [mib_or_none(r.get(key)) for r in proc.rounds]
            if all(y is None for y in ys):
                continue
            ys = [math.nan if y is None else y for y in ys]
            if key == "cgroup_usage" and right is not None:
                right.plot(xs, ys, label=label + CGROUP_RIGHT, **style)
                right.set_ylim(bottom=0, top=max(y for y in ys if not math.isnan(y)) * 1.08)
                right.set_ylabel("cgroup memory use (MiB)")
                continue
            ax.plot(xs, ys, label=label, **style)
            top = max([top] + [y for y in ys if not math.isnan(y)])
        clean = [r.get("round") for r in proc.rounds if r.get("cleanup")]
        for i, x in enumerate(clean):
            ax.axvline(x, color="#2ca02c", alpha=0.18, lw=4 if len(clean) < 60 else 1.5,
                       zorder=0, label="cleanup round" if i == 0 else None)
        shown = set()
        for p in proc.pressure:
            x = pressure_x(proc, p)
            if x is None:
                continue
            level = p.get("level", "?")
            color = PRESSURE_COLORS.get(level, "#b00020")
            ax.axvline(x, color=color, ls=":", lw=1.2, zorder=1)
            # The marker sits on the top edge, clear of the curves.
            ax.plot([x], [1.0], transform=ax.get_xaxis_transform(), linestyle="none",
                    marker="v", ms=10, color=color, clip_on=False, zorder=5,
                    label=text(f"memory pressure ({level})") if level not in shown else None)
            shown.add(level)
        ax.set_title(text(panel_title(proc)), fontsize=11, loc="left", pad=14)
        ax.set_xlabel("round")
        ax.set_ylabel("memory (MiB)")
        ax.set_ylim(bottom=0, top=(top * 1.08) if top else 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if right is not None:
            more = right.get_legend_handles_labels()
            handles, labels = handles + more[0], labels + more[1]
        # Clear of the right axis's label when there is one.
        ax.legend(handles, labels, loc="upper left", fontsize=9, frameon=False,
                  bbox_to_anchor=(1.12 if right else 1.01, 1.0))
    fig.suptitle("roundtrim: memory per round", fontsize=13, x=0.01, ha="left")
    fig.tight_layout()
    fig.savefig(png, dpi=110, bbox_inches="tight")
    plt.close(fig)


def gnuplot_quote(text):
    """One of the report's own texts (never the log's) as a gnuplot string."""
    return "'" + str(text).replace("'", "''") + "'"


def gnuplot_texts(path, texts):
    """Writes texts as one line of a data file, for the script to read with strcol: the log's
    texts and the output's path reach gnuplot as data, never through the script's syntax (a
    newline in a quoted title would end it, and gnuplot would run the next line)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join('"' + roundtrim_text.gnuplot_field(t) + '"' for t in texts) + "\n")


def gnuplot_read_texts(path, names):
    """The script lines that set the variables names from the texts of path (gnuplot_texts)."""
    assigns = ", ".join(f"{name} = strcol({i + 1})" for i, name in enumerate(names))
    return ['set datafile separator "\\t"',
            f"stats {gnuplot_quote(path)} using ({assigns}, 0) every ::0::0 nooutput",
            "set datafile separator whitespace"]


def plot_gnuplot(procs, png, gnuplot):
    with tempfile.TemporaryDirectory(prefix="roundtrim-report-") as tmp:
        probe = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
        terminal = "pngcairo" if "pngcairo" in probe.stdout + probe.stderr else "png"
        height = 460 * len(procs)
        out_texts = os.path.join(tmp, "output.txt")
        gnuplot_texts(out_texts, [png])
        script = gnuplot_read_texts(out_texts, ["out_png"])
        script += [f"set terminal {terminal} size 1200,{height} noenhanced",
                   "set output out_png",
                   "set datafile missing 'NaN'",
                   "set key outside right top",
                   "set grid",
                   f"set multiplot layout {len(procs)},1"]
        for n, proc in enumerate(procs):
            data = os.path.join(tmp, f"p{n}.dat")
            present = [s for s in SERIES
                       if any(isinstance(r.get(s[0]), (int, float)) for r in proc.rounds)]
            with open(data, "w") as f:
                for r in proc.rounds:
                    vals = [mib_or_none(r.get(s[0])) for s in present]
                    clean = mib_or_none(r.get("rss_after")) if r.get("cleanup") else None
                    row = [r.get("round")] + vals + [clean]
                    f.write(" ".join("NaN" if v is None else f"{v}" for v in row) + "\n")
            own_axis = cgroup_on_own_axis(proc)
            plots = []
            for i, s in enumerate(present):
                right = own_axis and s[0] == "cgroup_usage"
                plots.append(f"{gnuplot_quote(data)} using 1:{i + 2}"
                             f"{' axes x1y2' if right else ''} with linespoints {s[3]} "
                             f"title {gnuplot_quote(s[1] + (CGROUP_RIGHT if right else ''))}")
            script += (["set y2tics", "set y2range [0:*]",
                        "set y2label 'cgroup memory use (MiB)'", "set ytics nomirror"]
                       if own_axis else ["unset y2tics", "unset y2label", "set ytics mirror"])
            plots.append(f"{gnuplot_quote(data)} using 1:{len(present) + 2} with points "
                         "pt 9 ps 1.6 lc rgb '#2ca02c' title 'cleanup round'")
            script.append("unset arrow")
            levels = []
            for p in proc.pressure:
                x = pressure_x(proc, p)
                if x is None or not math.isfinite(x):
                    continue
                level = p.get("level", "?")
                script.append(f"set arrow from {x}, graph 0 to {x}, graph 1 nohead dt 3 "
                              f"lc rgb '{PRESSURE_COLORS.get(level, '#b00020')}' lw 2")
                if level not in levels:
                    levels.append(level)
            # The panel's title and the pressure levels' key entries come from the log: data.
            texts = os.path.join(tmp, f"p{n}.txt")
            gnuplot_texts(texts, ["roundtrim: " + panel_title(proc)]
                          + [f"memory pressure ({level})" for level in levels])
            script += gnuplot_read_texts(texts, [f"title_{n}"] + [f"level_{n}_{i}"
                                                                  for i in range(len(levels))])
            # Key entries for the pressure lines: a curve with no points draws only its key.
            plots += [f"NaN with lines dt 3 lw 2 lc rgb '{PRESSURE_COLORS.get(level, '#b00020')}' "
                      f"title level_{n}_{i}" for i, level in enumerate(levels)]
            script += [f"set title title_{n}",
                       "set xlabel 'round'", "set ylabel 'memory (MiB)'",
                       "set yrange [0:*]", "set xtics 1" if len(proc.rounds) <= 20
                       else "set xtics autofreq",
                       "plot " + ", \\\n     ".join(plots)]
        script.append("unset multiplot")
        path = os.path.join(tmp, "plot.gp")
        with open(path, "w") as f:
            f.write("\n".join(script) + "\n")
        result = subprocess.run([gnuplot, path], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("gnuplot failed: " + (result.stderr.strip().splitlines() or
                                                     ["no message"])[-1])


def have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


def draw(procs, png):
    """Draws the plot; returns an error message, or None on success."""
    procs = [p for p in procs if p.rounds]
    if not procs:
        return "no round records to plot"
    if len(procs) > MAX_PANELS:
        print(f"{PROG}: plotting the first {MAX_PANELS} of {len(procs)} processes; "
              "use --pid to pick one", file=sys.stderr)
        procs = procs[:MAX_PANELS]
    choice = os.environ.get("ROUNDTRIM_PLOTTER", "")
    if choice not in ("", "matplotlib", "gnuplot", "none"):
        return f"ROUNDTRIM_PLOTTER={choice} is not matplotlib, gnuplot or none"
    gnuplot = shutil.which("gnuplot")
    use_mpl = choice in ("", "matplotlib") and have_matplotlib()
    use_gp = not use_mpl and choice in ("", "gnuplot") and gnuplot
    try:
        if use_mpl:
            plot_matplotlib(procs, png)
        elif use_gp:
            plot_gnuplot(procs, png, gnuplot)
        else:
            return (f"cannot draw {png}: neither matplotlib nor gnuplot is installed; install "
                    "one (Debian/Ubuntu: apt-get install python3-matplotlib, or gnuplot-nox)")
    except (OSError, RuntimeError, ValueError) as e:
        return f"cannot draw {png}: {e}"
    if not os.path.isfile(png) or os.path.getsize(png) == 0:
        return f"cannot draw {png}: the plotting tool wrote nothing"
    return None
