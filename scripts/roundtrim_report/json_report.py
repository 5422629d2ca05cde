"""`roundtrim report --json`: one JSON object for a round log, {"processes": [...]}, each
process with its role, its executable, its number of rounds, its diagnosis (the verdict, the
holder and the forecast first, the breakdown after), its RSS trends with their windows, and the
latest record of each kind the library wrote for it, whole (start, round, pressure, sites,
holders, exit or exec), for programs to read."""

import json
import math

from . import diagnosis as roundtrim_diagnosis
from .roundlog import EVENTS
from .trends import trends

def print_json(procs, resolver, out):
    """--json: per process, what it is, its trend and its diagnosis; one JSON document, written
    a process at a time."""
    out.write('{\n "processes": [')
    for n, proc in enumerate(procs):
        diagnosis = roundtrim_diagnosis.diagnosis_of(proc, resolver)
        t = trends(proc, diagnosis)
        entry = {
            "pid": proc.pid,
            "role": proc.role,
            "exe": proc.exe,
            "rounds": len(proc.rounds),
            "diagnosis": diagnosis,
            # RSS after each round's cleanup, over every round
            "rss_trend_bytes_per_round": None if t["all"] is None else round(t["all"][2]),
            "rss_trend_rounds": None if t["all"] is None else list(t["all"][:2]),
            # RSS before the cleanup over the diagnosis's rounds: what its verdict measures
            "rss_before_trend_in_diagnosis_rounds": None if t["window"] is None else {
                "first_round": t["window"][0], "last_round": t["window"][1],
                "bytes_per_round": round(t["window"][2])},
            "cleanup_held_back_rounds": t["held_back"],
            # every key the library wrote, as it wrote it (the diagnosis's are above)
            "latest_records": latest_records(proc),
        }
        text = json.dumps(finite(entry), indent=1, allow_nan=False)
        out.write(("," if n else "") + "\n  " + text.replace("\n", "\n  "))
    out.write("\n ]\n}\n")


# The deepest record kept whole: finite() and the indenting encoder recurse once or twice a
# level, so a record the reader parsed (up to about 1000 levels) could end the document half
# written. The library's records nest a few levels.
MAX_NESTING = 64


def latest_records(proc):
    """The latest record of each kind but the diagnosis, in the log's order of kinds; one that
    nests deeper than MAX_NESTING is left out."""
    kept = proc.latest or {}
    out = {}
    for event in EVENTS:
        if event in kept and event != "diagnosis":
            try:
                record = json.loads(kept[event])
            except ValueError:  # a line the reader completed: kept as it parsed
                continue
            if nesting(record) <= MAX_NESTING:
                out[event] = record
    return out


def nesting(value):
    """How many objects and arrays deep value goes (without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict)
                                                  else value))
    return deepest


def finite(value):
    """value with NaN and the infinities as null: JSON has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
