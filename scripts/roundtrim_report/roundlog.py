"""A roundtrim round log read into what `roundtrim report` shows of it: the processes, each with
its start, its rounds, its memory-pressure events, its sites and diagnosis records and its exit,
and the notes of the lines skipped.

The log holds one JSON object per line, written by libroundtrim.so: a "start" record with the
settings, one "round" record per round, "pressure" records when memory use crosses a line, and
an "exit" record. Several processes may share one log (ROUNDTRIM_LOG without %p). The log is
read a line at a time: a week's log can hold millions of lines, and what is kept of each round
is a few numbers (Rounds)."""

import contextlib
import json
import sys
from array import array

from . import diagnosis as roundtrim_diagnosis
from . import text as roundtrim_text
from .checks import bad_field, is_number
from .fields import EVENT_FIELDS, MEM_PARTS, RECORD_MAX_BYTES, SKIP_FIELDS, SKIP_REASON_OLD_WORDS, STEP_SKIPS

MAX_WARNINGS = 5  # the notes of skipped lines shown; the others are counted

# In a column of Rounds: the round has no such field (or null). Numbers are checked before
# they are kept: whole ones from 0 to below 2^64, times from 0 on.
NO_WHOLE = 2**64 - 1
NO_TIME = -1.0
ABSENT = object()  # a text field the record does not have (null is None)


def today_s_words(record):
    """An older version's word for a skip reason (cuda_no_context) read as today's (no_context),
    so that an old log and a new one count, explain and diagnose alike."""
    for key in SKIP_FIELDS:
        why = record.get(key)
        if isinstance(why, str) and why in SKIP_REASON_OLD_WORDS:
            record[key] = SKIP_REASON_OLD_WORDS[why]


class Rounds:
    """The round records of one process, kept as columns of the fields the report reads: under
    100 bytes a round where the record's dict takes kilobytes (a week's log can hold millions
    of rounds, or hundreds of thousands of processes of a round each). Its items are the rounds
    as dicts of those fields, made when asked for."""

    __slots__ = ("n", "columns", "times", "texts", "odd")

    # Whole numbers as the library writes them, kept in 8 bytes each (array "Q").
    WHOLE = ("round", "rss_before", "rss_after", "rss_peak", "heap_live", "cgroup_usage",
             "cuda_live_bytes", "cleanup_us", "trim_released_bytes", "gc_freed_bytes",
             "trim_steps", "device_held", "torch_released_bytes", "cupy_released_bytes",
             "cuda_pool_trim_bytes") + tuple("mem_" + part for part, resident, _ in MEM_PARTS
                                             if resident)
    # a text, a list of texts: an index in a table of values; the skips the table shows
    TEXT = ("source", "cleanup") + tuple(key for _, key in STEP_SKIPS)

    # The texts' distinct values, and their indexes: one table for every process.
    values = []
    index = {}

    def __init__(self):
        self.n = 0
        self.columns = {}  # field -> array, for fields some round has a number in
        self.times = array("d")
        # Each round's TEXT fields as indexes in values, one round after the other.
        self.texts = array("I")
        # Rounds with a number no column keeps exactly (a float where the library writes
        # whole numbers, a time written without a fraction, 2^64 - 1): their fields as read.
        self.odd = None

    def __len__(self):
        return self.n

    def has(self, key):
        """Whether some round has a number in key (a column of its own)."""
        return key in self.columns

    def add(self, record):
        get = record.get
        ts = get("ts")
        exact = ts is None or type(ts) is float
        whole = [get(name) for name in self.WHOLE]
        for v in whole:
            if v is not None and (type(v) is not int or v == NO_WHOLE):
                exact = False
        if not exact:
            if self.odd is None:
                self.odd = {}
            self.odd[self.n] = {k: record[k] for k in ("ts",) + self.WHOLE + self.TEXT
                                if k in record}
            whole = [v if isinstance(v, (int, float)) else None for v in whole]
        for name, v in zip(self.WHOLE, whole):
            column = self.columns.get(name)
            if column is None:
                if v is None:
                    continue
                column = self.columns[name] = array("Q", [NO_WHOLE]) * self.n
            column.append(NO_WHOLE if v is None or not exact else v)
        self.times.append(ts if exact and ts is not None else NO_TIME)
        for name in self.TEXT:
            value = get(name, ABSENT)
            if type(value) is list:
                value = tuple(value)
            at = self.index.get(value)
            if at is None:
                at = self.index[value] = len(self.values)
                self.values.append(value)
            self.texts.append(at)
        self.n += 1

    def __getitem__(self, i):
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("round index out of range")
        odd = self.odd.get(i) if self.odd else None
        if odd is not None:
            return odd
        rec = {}
        for name, column in self.columns.items():
            if column[i] != NO_WHOLE:
                rec[name] = column[i]
        if self.times[i] != NO_TIME:
            rec["ts"] = self.times[i]
        row = i * len(self.TEXT)
        for k, name in enumerate(self.TEXT):
            value = self.values[self.texts[row + k]]
            if value is not ABSENT:
                rec[name] = value
        return rec

    def __iter__(self):
        return (self[i] for i in range(self.n))

    def field(self, name):
        """The value of name of each round, in order: None where it has none."""
        column = self.times if name == "ts" else self.columns.get(name)
        missing = NO_TIME if name == "ts" else NO_WHOLE
        for i in range(self.n):
            odd = self.odd.get(i) if self.odd else None
            if odd is not None:
                yield odd.get(name)
            elif column is not None and column[i] != missing:
                yield column[i]
            else:
                yield None


# The fields of a start and of an exit (or exec) record the report reads.
START_FIELDS = ("ts", "role", "exe", "allocator", "sites_skipped")
# The settings the diagnosis computed from round records reads (roundtrim_diagnosis.context_line).
START_SETTINGS = roundtrim_diagnosis.CONTEXT_SETTINGS
EXIT_FIELDS = ("event", "rounds", "cleanups", "rss", "hooks_attached", "hooks_missing",
               "hooks_not_imported")


class Process:
    """What the report keeps of what the log says about one process: a few hundred bytes for a
    process of one round (a log can hold hundreds of thousands)."""

    __slots__ = ("pid", "start", "exit", "keep_rounds", "rounds", "allocator", "pressure",
                 "sites", "diagnosis", "skips", "least_ts", "latest")

    def __init__(self, pid, sites, keep_rounds=True, keep_latest=False):
        self.pid = pid
        self.start = None  # the start record's START_FIELDS
        self.exit = None  # the exit or exec record's EXIT_FIELDS
        self.keep_rounds = keep_rounds
        self.rounds = Rounds()
        self.allocator = None  # the last round's
        self.pressure = []
        self.sites = sites  # a roundtrim_sites.Kept
        self.diagnosis = roundtrim_diagnosis.Kept()
        self.skips = {}  # (field, reason) -> rounds: the steps the records say were skipped
        self.least_ts = None  # the earliest time of a round or pressure record
        # --json: the latest record of each kind, whole, as its JSON text (event -> text)
        self.latest = {} if keep_latest else None

    @property
    def role(self):
        return (self.start or {}).get("role")

    @property
    def exe(self):
        return (self.start or {}).get("exe")

    def seen_at(self, record):
        ts = record.get("ts")
        if isinstance(ts, (int, float)) and (self.least_ts is None or ts < self.least_ts):
            self.least_ts = ts

    def first_ts(self):
        stamps = [(self.start or {}).get("ts"), self.least_ts]
        stamps = [t for t in stamps if isinstance(t, (int, float))]
        return min(stamps) if stamps else None

    def has(self, key):
        return self.rounds.has(key)


# The fields of a pressure record the report reads.
PRESSURE_FIELDS = ("ts", "level", "percent", "limit_bytes", "limit_source")


class Log:
    """What the report keeps of a log: the processes, in order of first appearance, the first
    notes of skipped lines and how many there were, and the fields for which records were
    skipped (one a record)."""

    def __init__(self):
        self.processes = {}
        self.records = 0  # the roundtrim records, of every process
        self.warnings = []
        self.skipped = 0
        self.bad_records = 0
        self.bad_fields = {}

    def warn(self, text):
        self.skipped += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)


# The longest line kept, in characters: four times the library's longest record (a sites record),
# room for a record appended to a cut one. A longer line is no record of roundtrim's (another
# program's output, a binary file): it is read in pieces and dropped, so that the report's memory
# stays bounded whatever the log holds.
MAX_LINE = 4 * RECORD_MAX_BYTES


def bounded_lines(f):
    """The lines of f, one at a time, each cut at MAX_LINE characters (the rest read, dropped)."""
    while True:
        line = f.readline(MAX_LINE)
        if not line:
            return
        if len(line) == MAX_LINE and not line.endswith("\n"):
            rest = line
            while len(rest) == MAX_LINE and not rest.endswith("\n"):
                rest = f.readline(MAX_LINE)
        yield line


@contextlib.contextmanager
def log_lines(path):
    """The lines of the log, one at a time, as bounded_lines cuts them; - is standard input."""
    if path == "-":
        yield bounded_lines(sys.stdin)
    else:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield bounded_lines(f)


def complete_tail(line):
    """A whole record appended to a cut one on the same line (older roundtrim versions did not
    start a new line after a short write), or None."""
    at = line.rfind('{"event":')
    if at <= 0:
        return None
    try:
        record = json.loads(line[at:])
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


# The records the library writes: the round record and those of EVENT_FIELDS.
EVENTS = ("round",) + tuple(EVENT_FIELDS)


def parse_line(line, clean):
    """The record of a line (json.loads; ValueError or RecursionError for one that is no JSON or
    nests too deep), with its texts made safe for a terminal when clean is set."""
    record = json.loads(line)
    if clean and roundtrim_text.needs_cleaning(line):
        record = roundtrim_text.cleaned(record)
    return record


def read_records(lines, path, new_process, only_pid=None, clean=False):
    """Reads the log's lines into a Log: new_process(pid) makes the Process that keeps a
    process's records; with only_pid, the records of other processes are checked (for the
    notes) and counted, not kept. clean: every text of the records made safe for a terminal
    (roundtrim_text.terminal_text)."""
    log = Log()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line) >= MAX_LINE:
            log.warn(f"{path}:{number}: a line of {MAX_LINE // (1024 * 1024)} MiB or more, "
                     "longer than any roundtrim record: not read; skipped")
            continue
        as_read = True  # the line is the record's JSON as the report keeps it
        try:
            record = parse_line(line, clean)
            as_read = not (clean and roundtrim_text.needs_cleaning(line))
        except (ValueError, RecursionError):
            as_read = False
            record = complete_tail(line)
            if not line.endswith("\n"):  # the last line, without its end
                log.warn(f"{path}:{number}: incomplete last record skipped "
                         "(the process was probably stopped while writing it)")
            elif line.startswith('{"event":'):
                log.warn(f"{path}:{number}: incomplete record skipped (a write was cut "
                         "short: disk full or file size limit)")
            else:
                log.warn(f"{path}:{number}: not a JSON record; skipped")
            if record is None:
                continue
            if clean:
                record = roundtrim_text.cleaned(record)
        if not isinstance(record, dict) or "pid" not in record:
            log.warn(f"{path}:{number}: not a roundtrim record (no pid); skipped")
            continue
        event = record.get("event")
        key, why = bad_field(record)
        if key:
            what = f"{event} record" if isinstance(event, str) else "record"
            log.warn(f"{path}:{number}: {what} skipped: {why}")
            log.bad_records += 1
            log.bad_fields[key] = None
            continue
        log.records += 1
        pid = record["pid"]
        proc = None
        if only_pid is None or pid == only_pid:
            proc = log.processes.get(pid)
            if proc is None:
                proc = log.processes[pid] = new_process(pid)
        if event not in EVENTS:
            log.warn(f"{path}:{number}: unknown event {event!r}; skipped")
            continue
        if proc is None:
            continue
        if proc.latest is not None:  # before the round's record gains the report's columns
            proc.latest[event] = line if as_read else json.dumps(record)
        if event == "start":
            # the same names in every process of a program: one copy of each
            proc.start = {k: sys.intern(record[k]) if isinstance(record[k], str) else record[k]
                          for k in START_FIELDS if k in record}
            settings = record.get("settings")
            if isinstance(settings, dict):
                proc.start["settings"] = {
                    k: {"value": sys.intern(settings[k]["value"])} for k in START_SETTINGS
                    if isinstance(settings.get(k), dict)
                    and isinstance(settings[k].get("value"), str)}
        elif event == "round":
            today_s_words(record)
            allocator = record.get("allocator")
            proc.allocator = sys.intern(allocator) if isinstance(allocator, str) else None
            proc.seen_at(record)
            proc.diagnosis.add_round(record)
            memory = record.get("memory")
            if isinstance(memory, dict):  # the parts, as columns of their own
                for part, value in memory.items():
                    if is_number(value, whole=True):
                        record["mem_" + part] = value
            record["device_held"] = device_held(record)
            for key in SKIP_FIELDS:
                why = record.get(key)
                if isinstance(why, str):
                    proc.skips[(key, why)] = proc.skips.get((key, why), 0) + 1
            if proc.keep_rounds:
                proc.rounds.add(record)
        elif event == "pressure":
            proc.seen_at(record)
            event_kept = {k: record[k] for k in PRESSURE_FIELDS if k in record}
            if not isinstance(event_kept.get("level"), str):
                event_kept["level"] = "?"
            proc.pressure.append(event_kept)
        elif event == "sites":
            proc.sites.add(record)
            if proc.keep_rounds:  # a leak's growing sites come from the last ones
                proc.diagnosis.add_sites_line(record.get("round"),
                                              line if as_read else json.dumps(record))
        elif event == "diagnosis":
            proc.diagnosis.add_diagnosis(record)
        elif event == "holders":
            proc.diagnosis.add_holders(record)
        else:  # exit, exec: the last record of the program image
            proc.exit = {k: record[k] for k in EXIT_FIELDS if k in record}
    return log



def device_held(record):
    """Device memory the process holds from the driver at the round's end: its live tensors and
    what PyTorch's cache and the driver's pools keep (the record's memory parts); the hooks' live
    bytes where the parts are unknown (they leave out the pools' free reserve)."""
    live, cached = record.get("mem_device_live"), record.get("mem_device_cached")
    if live is not None and cached is not None:
        return live + cached
    value = record.get("cuda_live_bytes")
    return value if is_number(value, whole=True) else None
