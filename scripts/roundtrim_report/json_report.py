"""`roundtrim report --json`: one JSON object for a round log, {"processes": [...]}, each
process with its role, its executable, its number of rounds, its RSS trend and its diagnosis,
for programs to read."""

import json
import math

from . import diagnosis as roundtrim_diagnosis
from .common import MIB, trend_per_round

def print_json(procs, resolver, out):
    """--json: per process, what it is, its trend and its diagnosis; one JSON document, written
    a process at a time."""
    out.write('{\n "processes": [')
    for n, proc in enumerate(procs):
        trend = trend_per_round(proc.rounds, "rss_after")
        entry = {
            "pid": proc.pid,
            "role": proc.role,
            "exe": proc.exe,
            "rounds": len(proc.rounds),
            "rss_trend_bytes_per_round": None if trend is None else round(trend * MIB),
            "diagnosis": roundtrim_diagnosis.diagnosis_of(proc, resolver),
        }
        text = json.dumps(finite(entry), indent=1, allow_nan=False)
        out.write(("," if n else "") + "\n  " + text.replace("\n", "\n  "))
    out.write("\n ]\n}\n")


def finite(value):
    """value with NaN and the infinities as null: JSON has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
