"""The command line of `roundtrim report`: its usage and help text, the checks of its options
(a wrong one exits with status 2 and a line that names it), and main, which reads the log and
hands its processes to the report asked for: the table (table.py), --json (json_report.py),
--html (html.py), --png (plot.py), --sites (sites.py), or the row of one round (--round)."""

import argparse
import os
import sys

from . import html as roundtrim_html
from . import sites as roundtrim_sites
from . import text as roundtrim_text
from .common import PROG, plural
from .fields import DIAG_VERDICTS
from .json_report import print_json
from .plot import MAX_PANELS, cgroup_on_own_axis, cgroup_ratio, draw
from .roundlog import Process, log_lines, read_records
from .symbols import Resolver
from .table import describe, print_round_row, print_table

USAGE = """\
roundtrim report LOG.jsonl [--png OUT.png] [--html OUT.html] [--json] [--pid PID [--round N]]
       roundtrim report --sites LOG.jsonl [--last K] [--native] [--png OUT.png] [--pid PID]"""

# The causes the diagnosis gives, as the help lists them: "leak, ..., unsure or none".
VERDICTS = ", ".join(c for c in DIAG_VERDICTS if c != "none") + " or none"

DESCRIPTION = """\
Starts each process with its diagnosis: why its memory grows over its last rounds
(VERDICTS), then for a Python leak what keeps it (the holder) and when the growth uses up the
memory left (the forecast), then how fast each part of its memory grows, what roundtrim's
cleanup recovers per round, and the advice that fixes it; for a leak, the allocation sites that
grow when sites were sampled (ROUNDTRIM_SITES=true). Every figure says the rounds it covers.
The process writes the diagnosis itself (its "diagnosis" records); a log from a roundtrim whose
round records have no memory breakdown gets no guess, only a note.

Then prints a table of each round recorded in a roundtrim round log (ROUNDTRIM_LOG): the RSS
before and after the round's cleanup, the round's peak RSS, the live heap, the cgroup's
memory use and the device memory the process holds when known, the cleanup actions and their
time, and the memory-pressure events between rounds. A summary per process gives what the
cleanups gave back (resident, and device memory), the trend per round of RSS after the cleanup
over every round (flat memory shows as a trend near 0 MiB/round) and of RSS before the cleanup
over the diagnosis's rounds (what its verdict measures), the rounds whose cleanup was held back,
and the Python round hooks that attached, and those that never did (module never imported, or
imported without the name). A line cut short,
a line of 2 MiB or more (longer than any record), or a record with a field of the wrong type or
out of range (negative, NaN, 2^64 or more), is skipped with a note on standard error that names
its line and the field.

With --json, prints instead one JSON object: {"processes": [{"pid", "role", "exe", "rounds",
"diagnosis": {"cause", "growth_bytes_per_round", "holders", "forecast", then "slopes" (per
part), "shares", "recovered_bytes_per_round", "sites" (for a leak), "advice", ...},
"rss_trend_bytes_per_round", "rss_trend_rounds", "rss_before_trend_in_diagnosis_rounds",
"cleanup_held_back_rounds", "latest_records": {"start", "round", "pressure", "sites",
"holders", "exit" or "exec": the latest record of each kind, whole}}]}.

With --html, also writes one self-contained page (no network access needed to open it): per
process the diagnosis (the holder and the forecast first), a chart per round the page's width
(the parts of memory stacked, RSS before and after the cleanup, the live heap, what cleanup
gave back, an axis labelled every few rounds), the trends, the table of the rounds behind a
disclosure, the growing allocation sites with their stacks, and the notes on the log and the
steps the records say were skipped.

With --png, also draws RSS (before, after, peak), the live heap and device memory per round,
with the rounds that cleaned up marked, to OUT.png. The cgroup's memory use is drawn on the
same axis when it is of the process's size, else on an axis of its own on the right (a cgroup
shared with other processes would flatten every other line); the legend says which.

With --sites, reports the allocation sites sampled with ROUNDTRIM_SITES=true (roundtrim run
--sites) instead: per process, the sites whose live bytes grow round after round, by the
least-squares slope of their live bytes over the last K rounds (default 5), largest first,
with the growth per round, the live bytes at the last round and the stack: Python frames
(file:line function), then native frames, named by the log or, where it has no name, by the
module's ELF symbol table and addr2line (function at file:line with debug information). The
native frames of the runtimes under the user's code (CPython, PyTorch, NumPy, the C and C++
runtimes) are folded into one line that names their modules; --native shows them all. A site
counts where it appears in a round's top lists; it needs 3 such rounds including the last, and
a growth over the rounds of at least one sampling interval. With --png, draws the live bytes
of the growing sites (else the largest live ones) per round, one line per site.""".replace("(VERDICTS)", f"({VERDICTS})")

EPILOG = """\
Exit status: 0 on success; 1 when the log cannot be read, holds no record of PID (with
--sites: no sites record), or the plot cannot be drawn; 2 for wrong arguments."""

# The options that take a value: each needs a non-empty one.
VALUE_OPTIONS = ("--png", "--pid", "--round", "--last", "--html")


class UsageError(Exception):
    pass


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The help laid out as the roundtrim command's other commands print theirs: "Usage:"
    first, lines of at most 95 characters whatever the terminal's width."""

    def __init__(self, prog):
        super().__init__(prog, width=95)

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, prefix="Usage: ")


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def argument_parser():
    parser = ArgumentParser(prog=PROG, usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                            formatter_class=HelpFormatter, add_help=False, allow_abbrev=False,
                            exit_on_error=False)
    arguments = parser.add_argument_group("Arguments")
    arguments.add_argument("log", nargs="?", metavar="LOG.jsonl",
                           help="the round log; - reads standard input")
    options = parser.add_argument_group("Options")
    options.add_argument("--png", metavar="OUT.png",
                         help="draw the plot into OUT.png (needs python3-matplotlib or "
                         "gnuplot-nox; with --sites, python3-matplotlib)")
    options.add_argument("--pid", metavar="PID",
                         help="only the process PID (a log may hold several)")
    options.add_argument("--round", metavar="N",
                         help="with --pid: only the header and the row of round N (no summary)")
    options.add_argument("--html", metavar="OUT.html",
                         help="write one self-contained page: per process the diagnosis, a "
                              "chart per round, the growing sites, the notes")
    options.add_argument("--json", action="store_true",
                         help="print each process's diagnosis and trend as one JSON object")
    options.add_argument("--sites", action="store_true",
                         help="report the growing allocation sites (needs sites records)")
    options.add_argument("--last", metavar="K",
                         help="with --sites: fit over the last K rounds with sites records (at "
                         "least 3; default 5, or all when fewer)")
    options.add_argument("--native", action="store_true",
                         help="with --sites: every native frame of each stack, the runtimes' "
                         "(CPython, PyTorch, NumPy, libc) not folded")
    options.add_argument("-h", "--help", action="help", help="show this help and exit")
    return parser


def fail(message, status=1):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(status)


def is_decimal(text):
    """Digits 0-9 only: str.isdigit also takes "²" and "٣", which int() refuses."""
    return text.isascii() and text.isdigit()


def parse_args(argv):
    """The options as a namespace (log, png, pid, round, sites, last, native); raises
    UsageError."""
    if "--" in argv:  # argparse takes it for the end of the options; the report never did
        raise UsageError("unknown option '--'")
    try:
        opts, rest = argument_parser().parse_known_args(argv)
    except argparse.ArgumentError as e:
        if e.argument_name in VALUE_OPTIONS:  # the one error of an option with a value
            raise UsageError(f"{e.argument_name} needs a value") from None
        # else a value given to an option without one: --sites=1
        names = e.argument_name.split("/")
        arg = next((a for a in argv if "=" in a and a.partition("=")[0] in names),
                   e.argument_name)
        raise UsageError(f"unknown option '{arg}'") from None
    # argparse takes "-5" for the log (it looks like a negative number); rest is in order
    for n, arg in enumerate([opts.log or "-"] + rest):
        if arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option '{arg}'")
        if n:
            raise UsageError(f"unexpected argument '{arg}' (one log at a time)")
    for name in VALUE_OPTIONS:
        if getattr(opts, name[2:]) == "":
            raise UsageError(f"{name} needs a value")
    if opts.log is None:
        raise UsageError("missing the round log to read")
    if opts.pid is not None:
        if not is_decimal(opts.pid):
            raise UsageError(f"--pid '{opts.pid}' is not a process id (expected a number)")
        opts.pid = int(opts.pid)
    if opts.round is not None:
        if opts.pid is None:
            raise UsageError("--round needs --pid (round numbers are per process)")
        if not is_decimal(opts.round):
            raise UsageError(f"--round '{opts.round}' is not a round number")
        opts.round = int(opts.round)
        if opts.sites:
            raise UsageError("--round does not go with --sites")
    if opts.json:
        for name, given in (("--sites", opts.sites), ("--png", opts.png), ("--round", opts.round),
                            ("--html", opts.html)):
            if given:
                raise UsageError(f"--json does not go with {name}")
    if opts.html:
        for name, given in (("--sites", opts.sites), ("--round", opts.round)):
            if given:
                raise UsageError(f"--html does not go with {name}")
    if opts.last is not None:
        if not opts.sites:
            raise UsageError("--last goes with --sites")
        if not is_decimal(opts.last) or int(opts.last) < 3:
            raise UsageError(f"--last '{opts.last}' is not a number of rounds of at least 3 "
                             "(a trend needs 3 points)")
        opts.last = int(opts.last)
    if opts.native and not opts.sites:
        raise UsageError("--native goes with --sites")
    return opts



def main(argv):
    try:
        opts = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        print("Try 'roundtrim report --help'.", file=sys.stderr)
        return 2
    path = opts.log
    if opts.png:
        out_dir = os.path.dirname(os.path.abspath(opts.png))
        if not os.path.isdir(out_dir):
            fail(f"cannot write {opts.png}: the directory {out_dir} does not exist")
    if opts.sites:  # the records of the fit, and every round's live bytes for the plot
        last = opts.last or roundtrim_sites.DEFAULT_LAST
        history = bool(opts.png)

        def new_process(pid):
            return Process(pid, roundtrim_sites.Kept(last, history), keep_rounds=False)
    else:  # the rounds; of the sites records, their number (the diagnosis keeps the last lines)
        def new_process(pid):
            return Process(pid, roundtrim_sites.Kept(0), keep_latest=opts.json)
    name = "standard input" if path == "-" else path
    # What the log says reaches a terminal only as text (JSON escapes it on its own).
    roundtrim_text.guard_terminal()
    try:
        with log_lines(path) as lines:
            log = read_records(lines, name, new_process, opts.pid, clean=not opts.json)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror or e}")
    for w in log.warnings:
        print(f"{PROG}: {w}", file=sys.stderr)
    if log.skipped > len(log.warnings):
        print(f"{PROG}: ... and {log.skipped - len(log.warnings)} more lines skipped",
              file=sys.stderr)
    if log.bad_records:
        fields = ", ".join(log.bad_fields)
        print(f"{PROG}: {plural(log.bad_records, 'record')} of {name} skipped for a field of "
              f"the wrong type or out of range ({fields}); the report is on the others",
              file=sys.stderr)
    if not log.records:
        fail(f"{name} holds no roundtrim records")
    procs = list(log.processes.values())
    if opts.pid is not None and not procs:
        fail(f"{name} holds no records of process {opts.pid}")
    if opts.round is not None:
        if not print_round_row(procs[0], opts.round, sys.stdout):
            fail(f"{name} holds no record of round {opts.round} of process {opts.pid}")
        return 0
    if opts.sites and not any(p.sites.rounds for p in procs):
        fail(f"{name} holds {roundtrim_sites.NO_SITES}")
    if len(procs) > 1:  # --json: on standard error, standard output is one JSON document
        print(f"{len(procs)} processes in {name}: "
              + ", ".join(str(p.pid) for p in procs) + ("" if opts.json else "\n"),
              file=sys.stderr if opts.json else sys.stdout)
    if opts.sites:
        error = roundtrim_sites.report(procs, describe, opts.last, opts.png, sys.stdout,
                                       sys.stderr, opts.native)
        if error:
            fail(error)
        return 0
    resolver = Resolver()
    if opts.json:
        print_json(procs, resolver, sys.stdout)
        return 0
    if opts.html:
        try:
            roundtrim_html.write_page(opts.html, procs, log, name, describe, resolver)
        except OSError as e:
            fail(f"cannot write {opts.html}: {e.strerror or e}")
        print(f"page written to {opts.html}")
    for proc in procs:
        print_table(proc, sys.stdout, resolver)
    sys.stdout.flush()
    if opts.png:
        error = draw(procs, opts.png)
        if error:
            fail(error)
        print(f"plot written to {opts.png}")
        for proc in procs[:MAX_PANELS]:
            if proc.rounds and cgroup_on_own_axis(proc):
                print(f"process {proc.pid}: the cgroup's memory use is {cgroup_ratio(proc):.0f} "
                      "times the process's and has an axis of its own (right)")
    return 0
