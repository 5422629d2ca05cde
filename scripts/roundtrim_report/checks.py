"""The checks a round log's record passes before `roundtrim report` reads it: each field the
report reads or the library writes as a number, a list or text has the kind the library writes
(a size from 0 to below 2^64, a signed slope, a process id, a list of text...). A record with a
field of the wrong type or out of range is skipped, with a note that names the field and the
value."""

import json
import math

from .fields import EVENT_FIELDS, ROUND_FIELDS

# The library writes counters, sizes and times as unsigned 64-bit numbers: beyond that, a value
# is no measurement (Python's JSON parser also lets NaN, Infinity and 1e308 through).
NUMBER_LIMIT = 2.0**64


def is_number(value, whole=False):
    """A finite number from 0 to below 2^64 (whole: an integer); never a bool."""
    if type(value) is int:  # the common case first, and one too long for math.isfinite
        return 0 <= value < NUMBER_LIMIT
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if whole and not isinstance(value, int):
        return False
    return math.isfinite(value) and 0 <= value < NUMBER_LIMIT


def is_signed(value):
    """A finite number between -2^64 and 2^64; never a bool (a slope or a growth may be
    negative)."""
    if type(value) is int:
        return -NUMBER_LIMIT < value < NUMBER_LIMIT
    return (isinstance(value, float) and math.isfinite(value)
            and -NUMBER_LIMIT < value < NUMBER_LIMIT)


def is_text_list(value):
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# (check, what was expected) for each kind of field.
NUMBER = (is_number, "a number from 0 to below 2^64")
NUMBER_OR_NULL = (lambda v: v is None or is_number(v), "a number from 0 to below 2^64, or null")
WHOLE = (lambda v: is_number(v, whole=True), "a whole number from 0 to below 2^64")
TEXT = (lambda v: v is None or isinstance(v, str), "text or null")
FLAG = (lambda v: v is None or isinstance(v, bool), "true, false or null")
SIGNED = (lambda v: is_signed(v), "a number between -2^64 and 2^64")
SIGNED_OR_NULL = (lambda v: v is None or is_signed(v), "a number between -2^64 and 2^64, or null")
NUMBERS_BY_NAME = (lambda v: isinstance(v, dict)
                   and all(x is None or is_signed(x) for x in v.values()),
                   "an object of numbers between -2^64 and 2^64 or nulls")
TEXTS = (is_text_list, "a list of text")
PID = (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31,
       "a process id, a whole number above 0")

OBJECT_OR_NULL = (lambda v: v is None or isinstance(v, dict), "an object or null")
OBJECT = (lambda v: isinstance(v, dict), "an object")
LIST = (lambda v: isinstance(v, list), "a list")
# Each check the records' field tables (roundtrim_report/fields.py) name.
CHECKS = {"number": NUMBER, "number_or_null": NUMBER_OR_NULL, "whole": WHOLE, "text": TEXT,
          "flag": FLAG, "texts": TEXTS, "pid": PID, "object_or_null": OBJECT_OR_NULL,
          "signed": SIGNED, "object": OBJECT, "list": LIST, "numbers_by_name": NUMBERS_BY_NAME}

# The checks of each record's keys, by event: the round record's and the others' tables. Every
# record starts with event, pid and ts; the diagnosis record says its round after them. A key
# not in its record's table is not checked (a newer library may add some).
HEADER = {key: CHECKS[check] for key, check, _, _ in ROUND_FIELDS
          if key in ("event", "pid", "ts", "round")}
EVENT_CHECKS = {"round": {key: CHECKS[check] for key, check, _, _ in ROUND_FIELDS}}
EVENT_CHECKS.update((event, {**HEADER, **{key: CHECKS[check] for key, check in rows}})
                    for event, rows in EVENT_FIELDS.items())


def shown(value, limit=40):
    """A value as the log has it, cut to limit characters."""
    try:
        text = json.dumps(value, separators=(",", ":"))
    except ValueError:  # a number too long to write back
        text = "a number too long to show"
    except RecursionError:
        text = "a value nested too deep to show"
    return text if len(text) <= limit else text[:limit] + "..."


def bad_field(record):
    """The first field that keeps a record out of the report, and why ("rss_before is "big"
    (expected ...)"); (None, None) when there is none."""
    checks = EVENT_CHECKS.get(record.get("event"), HEADER)
    for key, value in record.items():
        kind = checks.get(key)
        if kind and not kind[0](value):
            return key, f"{key} is {shown(value)} (expected {kind[1]})"
    return None, None
