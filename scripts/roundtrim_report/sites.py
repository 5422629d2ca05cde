"""roundtrim report --sites: the allocation sites whose live bytes grow round after round.

With ROUNDTRIM_SITES=true the library samples allocations by bytes and writes, after each round
record, a "sites" record: the top sites by live bytes gained since the previous record ("grown"),
by bytes of the round still live at its end ("round_live") and by live bytes ("live"), each with
its estimated live bytes and its stack (Python frames, then native frames as module + offset).
This module reads those records per process, fits a least-squares line to each site's live bytes
over the last rounds, and prints the sites that grow, with their stacks, naming native frames
the log left unnamed (symbols.py).

A stack leads with the user's own frames, as memray and py-spy show them: the Python frames,
then the native frames of the user's own code. The native frames of the runtimes underneath
(CPython, PyTorch, NumPy, the C and C++ runtimes) are folded into one line that names their
modules; --native shows every frame.

A site appears in a record only while it is among the top sites, so a round where it is absent
tells nothing about it: the fit uses the rounds where it is known, needs 3 of them, and needs
the last round of the window (a site that dropped out of the lists may have been freed).
"""

import importlib.util
import math
import re
import sys

from . import text as roundtrim_text
from .fields import NATIVE_FRAME_FIELDS, PY_FRAME_FIELDS, SITES_LISTS, SKIP_REASON_OLD_WORDS
from .stats import slope
from .symbols import Resolver

KIB = 1024.0
DEFAULT_LAST = 5
MIN_POINTS = 3
MAX_SITES_SHOWN = 10
MAX_NATIVE_FRAMES = 8
MAX_PLOT_SITES = 8
MAX_PANELS = 6
NO_SITES = ("no sites records: run with ROUNDTRIM_SITES=true or roundtrim run --sites to "
            "sample allocation sites")


# ---- units ----------------------------------------------------------------------------------


def human_bytes(n):
    """1536 -> '1.5 KiB'; 1048576 -> '1.0 MiB'."""
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024.0 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024.0
    return f"{sign}{n:.1f} TiB"


def human_rate(bytes_per_round):
    text = human_bytes(bytes_per_round)
    return ("+" if bytes_per_round >= 0 else "") + text + "/round"


# ---- reading the records ----------------------------------------------------------------------


def number(value):
    """A number of the log within what the library writes (64-bit counters); None for anything
    else, NaN and Infinity included (Python's JSON parser lets them through)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if abs(value) < 2.0**64 else None


def site_entries(record):
    """{site id: SITE} of the lists of a sites record (a site may be in several)."""
    entries = {}
    for key in SITES_LISTS:
        items = record.get(key)
        if not isinstance(items, list):
            continue
        for site in items:
            if (isinstance(site, dict) and isinstance(site.get("site"), str)
                    and number(site.get("live_bytes")) is not None):
                entries.setdefault(site["site"], site)
    return entries


NO_ROUNDS = frozenset()


class Kept:
    """What the report keeps of a process's sites records, given one at a time as the log is
    read (a record can be 512 KiB, a log can hold thousands): how many there were, the round
    numbers of those with one, the records of the last `last` of those rounds (all of them when
    last is None; the last written wins for a round), and with history, every round's live
    bytes per site, without the stacks (for the plot, which draws every round)."""

    __slots__ = ("count", "rounds", "last", "by_round", "history")

    def __init__(self, last=None, history=False):
        self.count = 0
        self.rounds = NO_ROUNDS  # a set from the first record on (most processes have none)
        self.last = last
        self.by_round = {}
        self.history = {} if history else None

    def add(self, record):
        self.count += 1
        rnd = number(record.get("round"))
        if rnd is None:
            return
        if not self.rounds:
            self.rounds = set()
        self.rounds.add(rnd)
        if self.history is not None:
            self.history[rnd] = {sys.intern(site_id): entry["live_bytes"]
                                 for site_id, entry in site_entries(record).items()}
        if self.last is None or rnd in self.by_round or len(self.by_round) < self.last:
            self.by_round[rnd] = record
        elif self.last and rnd > min(self.by_round):
            # The rounds kept only ever give way to higher ones: one dropped here never
            # comes back among the last rounds.
            del self.by_round[min(self.by_round)]
            self.by_round[rnd] = record

    def records(self):
        """The records kept, one per round, in round order."""
        return [self.by_round[r] for r in sorted(self.by_round)]


def usable_records(records):
    """The sites records with a round number, one per round (the last written wins), in round
    order."""
    kept = Kept()
    for rec in records:
        kept.add(rec)
    return kept.records()


class Site:
    """One site's live bytes per round, and its latest entry (for the stack)."""

    def __init__(self, site_id):
        self.id = site_id
        self.live = {}
        self.entry = None

    def add(self, round_number, entry):
        self.live[round_number] = entry["live_bytes"]
        self.entry = entry


def line_key(entry):
    """One Python line is one site: the innermost Python frame's file and line, or None for a
    stack without Python frames (its own native stack is its site)."""
    frames = python_frames(entry)
    if not frames:
        return None
    top = frames[0]
    return (str(top.get("file")), str(top.get("line")))


def sites_over(records):
    """The sites over the records, those allocating at the same Python line merged into one
    (their native stacks below it differ with sizes and code paths: one numpy line made two
    sites of 32 and 28 MiB for one 60 MiB leak). A member missing from a round's record keeps
    its last live bytes."""
    members = {}
    for rec in records:
        for site_id, entry in site_entries(rec).items():
            members.setdefault(site_id, Site(site_id)).add(rec["round"], entry)
    groups = {}
    for site in members.values():
        key = line_key(site.entry)
        groups.setdefault(key if key else ("site", site.id), []).append(site)
    rounds = sorted({r for site in members.values() for r in site.live})
    sites = {}
    for group in groups.values():
        if len(group) == 1:
            sites[group[0].id] = group[0]
            continue
        lead = max(group, key=lambda m: (max(m.live.values()), m.id))
        merged = Site(lead.id)
        merged.entry = lead.entry
        for rnd in rounds:
            known = [m.live[max(r for r in m.live if r <= rnd)]
                     for m in group if any(r <= rnd for r in m.live)]
            if any(rnd in m.live for m in group):
                merged.live[rnd] = sum(known)
        sites[merged.id] = merged
    return sites


class Growth:
    def __init__(self, site, points, per_round):
        self.site = site
        self.points = points
        self.per_round = per_round
        self.rises = sum(1 for (_, a), (_, b) in zip(points, points[1:]) if b > a)

    @property
    def last_live(self):
        return self.points[-1][1]


def growing_sites(window):
    """The sites of the window's records that grow: known in at least MIN_POINTS rounds
    including the last, with a positive slope whose growth over the window is at least one
    sampling interval (less is within the noise of byte sampling). Largest slope first.
    Returns (growing, number of sites seen in the window)."""
    sites = sites_over(window)
    last_round = window[-1]["round"]
    # Every sites record the library writes carries its sampling interval; one without it
    # (written by hand) gets no noise threshold.
    interval = number(window[-1].get("sample_bytes")) or 0
    grows = []
    for site in sites.values():
        points = sorted(site.live.items())
        if len(points) < MIN_POINTS or points[-1][0] != last_round:
            continue
        per_round = slope([x for x, _ in points], [y for _, y in points])
        if per_round is None or per_round <= 0:
            continue
        if per_round * (points[-1][0] - points[0][0]) < interval:
            continue
        grows.append(Growth(site, points, per_round))
    grows.sort(key=lambda g: (-g.per_round, -g.last_live, g.site.id))
    return grows, len(sites)


# ---- stacks ---------------------------------------------------------------------------------


# Each frame field's type as the library writes it: a field of any other type (a hand-edited or
# damaged log) is read as absent, so that every later step sees only what it expects.
FRAME_TYPES = {"text": str, "signed": int, "flag": bool}
PYTHON_FIELDS = {key: FRAME_TYPES[check] for key, check in PY_FRAME_FIELDS}
NATIVE_FIELDS = {key: FRAME_TYPES[check] for key, check in NATIVE_FRAME_FIELDS}


def typed_frames(frames, fields):
    if not isinstance(frames, list):
        return []
    return [{k: v for k, v in f.items()
             if k in fields and isinstance(v, fields[k])
             and (fields[k] is bool or not isinstance(v, bool))}
            for f in frames if isinstance(f, dict)]


def python_frames(entry):
    return typed_frames(entry.get("python"), PYTHON_FIELDS)


# The site every sample of the program's first round is counted at (imports, a model loaded once):
# no stack is kept for them.
START_TEXT = "the program's start: its first round, counted as one site without stacks"
# roundtrim's own frames (a framework hook's proxy calling the program's function): never shown.
OWN_MODULE = re.compile(r"libroundtrim\.so[.0-9]*")


def native_frames(entry):
    return [f for f in typed_frames(entry.get("frames"), NATIVE_FIELDS)
            if not OWN_MODULE.fullmatch((f.get("module") or "").rsplit("/", 1)[-1])]


def python_text(frame):
    file = frame.get("file") or "?"
    line = frame.get("line")
    function = frame.get("function") or "?"
    return f"{file}:{line if line is not None else '?'} {function}"


# The runtimes under a user's code, by the file name of the module (a frame's "module", the
# path the loader has for it): CPython (the interpreter, libpython, the standard library's
# extension modules and libffi under ctypes), PyTorch, NumPy and the BLAS it calls, OpenMP, the
# C++ runtime and its unwinder, the C library and the loader.
RUNTIME_FILES = re.compile(
    r"python\d[\d.]*[a-z]*"  # the interpreter's executable (python3.11)
    r"|(libpython|libffi|libtorch|libc10|libcaffe2|libopenblas|libmkl|libgomp|libiomp"
    r"|libgfortran|libquadmath|libstdc\+\+|libgcc_s|libunwind|ld-linux|ld64)[^/]*\.so[.0-9]*"
    r"|(libc|libm|libpthread|libdl|librt|libshm|libblas|libcblas|liblapack|libomp)\.so[.0-9]*")
# Folders whose modules are all a runtime's: CPython's own extension modules, the modules and
# the bundled libraries of the torch and numpy packages (pip wheels and Debian's).
RUNTIME_DIRS = re.compile(r"/(lib-dynload|torch|torch\.libs|numpy|numpy\.libs|[^/]*\.libs)/")
EXTENSION_TAG = re.compile(r"(\.cpython-[^./]*|\.abi3)?\.so(\.[0-9.]*)?$")


def runtime_module(module):
    """The short name of a runtime's module ("libtorch_cpu", "python3.11", "_multiarray_umath",
    "libc"), or None for a module of the user's own (the program, its libraries, its
    extensions) or an unknown one."""
    if not isinstance(module, str) or not module:
        return None
    name = module.rsplit("/", 1)[-1]
    if not (RUNTIME_FILES.fullmatch(name) or RUNTIME_DIRS.search(module)):
        return None
    return EXTENSION_TAG.sub("", name) or name


def folded_text(frames):
    """The line that stands for the runtime frames: how many, and their modules in the order
    they first come, innermost first."""
    modules = list(dict.fromkeys(runtime_module(f.get("module")) for f in frames))
    count = len(frames)
    return (f"{count} runtime frame{'s' if count != 1 else ''} folded ({', '.join(modules)}; "
            "--native shows them)")


def stack_lines(entry, resolver, native=False):
    """The site's stack as lines: its Python frames (innermost first), then its native frames.
    Unless native is set, the runtimes' native frames are folded into one line after the user's
    own; a stack of runtime frames only (a thread with no Python frame, such as a PyTorch
    worker) shows them, having nothing else to lead with."""
    if entry.get("program_start"):
        return [START_TEXT]
    lines = [python_text(f) for f in python_frames(entry)]
    natives = native_frames(entry)
    shown, folded = natives, []
    if not native:
        own = [f for f in natives if runtime_module(f.get("module")) is None]
        if own or lines:
            shown, folded = own, [f for f in natives if runtime_module(f.get("module"))]
    cap = len(shown) if native else MAX_NATIVE_FRAMES
    lines += [resolver.text(f) for f in shown[:cap]]
    if len(shown) > cap:
        lines.append(f"... {len(shown) - cap} more native frames")
    if folded:
        lines.append(folded_text(folded))
    if not lines:
        lines.append("(no frames recorded)")
    return lines


def shown_frames(entry, native=False):
    """The native frames stack_lines names (for the resolver to look up in one go)."""
    natives = native_frames(entry)
    if native:
        return natives
    own = [f for f in natives if runtime_module(f.get("module")) is None]
    return (own if own or python_frames(entry) else natives)[:MAX_NATIVE_FRAMES]


def best_name(entry, resolver):
    """What a person calls the site: its first Python frame of the program's own code (the
    record marks library frames), else its innermost Python frame, else its first named native
    frame of the user's own, else of a runtime, else its first module+offset."""
    if entry.get("program_start"):
        return "the program's start"
    frames = python_frames(entry)
    own = [f for f in frames if not f.get("library")]
    for frame in own + frames:
        file = str(frame.get("file") or "?").rsplit("/", 1)[-1]
        return f"{frame.get('function') or '?'} ({file}:{frame.get('line', '?')})"
    natives = native_frames(entry)
    own = [f for f in natives if runtime_module(f.get("module")) is None]
    for frame in own + [f for f in natives if f not in own]:
        name = resolver.name(frame)
        if name:
            return name
    if natives:
        first = (own or natives)[0]
        module = str(first.get("module") or "?").rsplit("/", 1)[-1]
        return f"{module}+{first.get('offset') or '?'}"
    return "site " + entry.get("site", "?")


# ---- the text -------------------------------------------------------------------------------


def rounds_text(first, last):
    return f"round {first}" if first == last else f"rounds {first}-{last}"


def objects_lines(kept, last):
    """What the report says of small Python objects' sampling, when it changed or stopped."""
    if last.get("python_objects_skipped") == "allocator_replaced":
        return ["  small Python objects not counted: tools kept putting allocators of their own "
                "past roundtrim's (allocator_replaced)"]
    since = [number(r.get("python_objects_since")) for r in kept.records()]
    since = [s for s in since if s]
    if len(set(since)) > 1:
        return [f"  small Python objects counted from round {since[-1]}: a tool's allocator "
                "went past roundtrim's, which was put back on top; the objects sampled before "
                "are left out"]
    return []


def header_lines(kept, last):
    """kept: the process's Kept records; last: its last record."""
    count = len(kept.rounds)
    bits = [f"{count} sites record{'s' if count != 1 else ''} "
            f"({rounds_text(min(kept.rounds), max(kept.rounds))})"]
    interval = number(last.get("sample_bytes"))
    if interval:
        bits.append(f"one sample per {human_bytes(interval)} allocated on average")
    if number(last.get("samples")) is not None:
        bits.append(f"{last['samples']} samples, {last.get('samples_live', '?')} live, "
                    f"{last.get('sites', '?')} sites")
    lines = ["  " + "; ".join(bits)]
    dropped = number(last.get("samples_dropped")) or 0
    site_drops = number(last.get("sites_dropped")) or 0
    if dropped or site_drops:
        lines.append(f"  estimates are low: {dropped} samples dropped (live table full), "
                     f"{site_drops} without a site entry")
    skipped = last.get("python_frames_skipped")
    if isinstance(skipped, str) and SKIP_REASON_OLD_WORDS.get(skipped, skipped) != "no_python":
        lines.append(f"  Python frames not read: {skipped}")
    lines += objects_lines(kept, last)
    if last.get("native_frames_skipped") == "libunwind_missing":
        lines.append("  native frames not taken: libunwind is missing (install libunwind8); "
                     "the stacks hold Python frames only")
    return lines


def print_process(proc, describe, last, resolver, out, native=False):
    """The growing sites of one process; returns its growing sites (for the plot)."""
    print(describe(proc), file=out)
    window = proc.sites.records()[-last:]
    if not window:
        print(f"  {NO_SITES}", file=out)
        print(file=out)
        return []
    for line in header_lines(proc.sites, window[-1]):
        print(line, file=out)
    if len(window) < MIN_POINTS:
        print(f"  a trend needs {MIN_POINTS} rounds with sites records; this process has "
              f"{len(window)}", file=out)
        print(file=out)
        return []
    grows, seen = growing_sites(window)
    print(f"  {len(grows)} of the {seen} sites these records list grow over "
          f"{rounds_text(window[0]['round'], window[-1]['round'])} (the last "
          f"{len(window)} with sites records; least-squares slope of each site's live bytes)",
          file=out)
    if not grows:
        print("  no site grows: every site known in these rounds holds as much or less, or "
              "grew by less than one sampling interval", file=out)
        print(file=out)
        return []
    frames = [f for g in grows[:MAX_SITES_SHOWN] for f in shown_frames(g.site.entry, native)]
    resolver.resolve_all(frames)
    for n, g in enumerate(grows[:MAX_SITES_SHOWN], 1):
        print(f"  {n:>2}. {human_rate(g.per_round)}  live {human_bytes(g.last_live)} at round "
              f"{g.points[-1][0]}  grew in {g.rises} of {len(g.points) - 1} steps  "
              f"(site {g.site.id})", file=out)
        for line in stack_lines(g.site.entry, resolver, native):
            print(f"        {line}", file=out)
    if len(grows) > MAX_SITES_SHOWN:
        print(f"  ... and {len(grows) - MAX_SITES_SHOWN} more growing sites, each slower",
              file=out)
    print(file=out)
    return grows


# ---- the plot -------------------------------------------------------------------------------


def sites_of_history(history, window):
    """{site id: SITE} over every round of history ({round: {site id: live bytes}}, as Kept
    keeps it), in the order of their first round, each with its entry (for the stack) from
    the window's records, the last of which is the last record of the history."""
    entries = {site_id: site.entry for site_id, site in sites_over(window).items()}
    sites = {}
    for rnd in sorted(history):
        for site_id, live in history[rnd].items():
            if site_id not in sites:
                sites[site_id] = Site(site_id)
                sites[site_id].entry = entries.get(site_id)
            sites[site_id].live[rnd] = live
    return sites


def plot_choice(sites, last, grows):
    """(sites to draw, over every round, and a title note): the growing sites, else the largest
    live ones at the last round."""
    if grows:
        return [sites[g.site.id] for g in grows[:MAX_PLOT_SITES]], "growing sites"
    largest = sorted((s for s in sites.values() if last in s.live),
                     key=lambda s: -s.live[last])[:MAX_PLOT_SITES]
    return largest, "no growing site: the largest live sites"


def draw(panels, png, resolver):
    """panels: [(title, {round: {site id: live bytes}} of every round, the fit's records,
    growing sites)]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    text = roundtrim_text.matplotlib_plain(matplotlib)  # the log's names: no mathtext
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.6 * len(panels)), squeeze=False)
    for ax, (title, history, window, grows) in zip(axes[:, 0], panels):
        sites, note = plot_choice(sites_of_history(history, window), window[-1]["round"],
                                  grows)
        rates = {g.site.id: g.per_round for g in grows}
        if grows and len(history) > len(window):
            ax.axvspan(window[0]["round"], window[-1]["round"], color="#999999", alpha=0.12,
                       label="rounds of the fit")
        xs = sorted(history)
        for site in sites:
            # Every round of the log, not only the fit's; rounds where it is unknown are gaps.
            ys = [site.live[x] / KIB / KIB if x in site.live else math.nan for x in xs]
            label = text(best_name(site.entry, resolver), limit=60)
            if site.id in rates:
                label += f"  {human_rate(rates[site.id])}"
            ax.plot(xs, ys, marker="o", ms=4, lw=1.6, label=label)
        ax.set_title(text(f"{title}: {note}"), fontsize=11, loc="left")
        ax.set_xlabel("round")
        ax.set_ylabel("live bytes (MiB, sampled estimate)")
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        if sites:
            ax.legend(loc="upper left", fontsize=9, frameon=False, bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("roundtrim: live bytes of allocation sites per round", fontsize=13, x=0.01,
                 ha="left")
    fig.tight_layout()
    fig.savefig(png, dpi=110, bbox_inches="tight")
    plt.close(fig)


# ---- entry ----------------------------------------------------------------------------------


def report(procs, describe, last, png, out, err, native=False):
    """Prints the growing sites of each process (proc.sites: a Kept of at least the last
    `last` rounds, with the history when png is set) and draws the plot; returns an error
    message about the plot, or None. native: every native frame of each stack, none folded."""
    resolver = Resolver()
    panels = []
    last = last or DEFAULT_LAST
    for proc in procs:
        grows = print_process(proc, describe, last, resolver, out, native)
        window = proc.sites.records()[-last:]
        if window:
            panels.append((f"process {proc.pid}", proc.sites.history, window, grows))
    out.flush()
    if not png:
        return None
    if len(panels) > MAX_PANELS:
        print(f"roundtrim report: plotting the first {MAX_PANELS} of {len(panels)} processes; "
              "use --pid to pick one", file=err)
        panels = panels[:MAX_PANELS]
    if importlib.util.find_spec("matplotlib") is None:
        return (f"cannot draw {png}: matplotlib is not installed (Debian/Ubuntu: apt-get install "
                "python3-matplotlib)")
    try:
        draw(panels, png, resolver)
    except (OSError, RuntimeError, ValueError) as e:
        return f"cannot draw {png}: {e}"
    print(f"plot written to {png}", file=out)
    return None
