"""The round records the preloaded library writes keep to their declared contract: every key is
one of the field table's (policy/round_fields.def, as the report reads it in
roundtrim_report/fields.py), in the table's order, with a value of its declared kind, and every
key the table says is always there is there. A key written without a row, a row whose key is no
longer written as declared, or a table the generated module no longer matches fails here."""

import sys

from conftest import PYTHON, ROOT, prog

sys.path.insert(0, str(ROOT / "scripts"))
from roundtrim_report.fields import (MEMORY_FIELDS, ROUND_FIELDS, SKIP_FIELDS,  # noqa: E402
                                     STEP_SKIPS)


def is_number(v):
    return type(v) is int and 0 <= v < 2**64


CHECKS = {
    "number": is_number,
    "number_or_null": lambda v: v is None or is_number(v),
    "whole": is_number,
    "text": lambda v: v is None or isinstance(v, str),
    "flag": lambda v: v is True,
    "texts": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "pid": lambda v: type(v) is int and 0 < v < 2**31,
    "object_or_null": lambda v: v is None or isinstance(v, dict),
}
TS_KEYS = {"ts", "cleanup_cpu_percent"}  # written with decimals: floats in JSON


def check_keys(obj, table, where):
    """Every key of obj is declared, in the table's order, with a value of its kind; every key
    declared always present is there."""
    order = [row[0] for row in table]
    for key, value in obj.items():
        assert key in order, f"{where}: {key} is not in the field table"
        check = dict((row[0], row[1]) for row in table)[key]
        if key in TS_KEYS and isinstance(value, float):
            value = int(value)
        assert CHECKS[check](value), f"{where}: {key}={value!r} is not {check}"
    positions = [order.index(k) for k in obj]
    assert positions == sorted(positions), f"{where}: keys out of the table's order"
    for key, _, _, when in table:
        if when == "always":
            assert key in obj, f"{where}: {key} is always written, and is missing"


def check_round(r, where):
    check_keys(r, ROUND_FIELDS, where)
    for key, _, _, when in ROUND_FIELDS:
        if when.startswith("always (null with "):  # null only with the key that says why
            why = when[len("always (null with "):-1]
            assert (r[key] is None) == (why in r), f"{where}: {key} and {why}"
    if r["memory"] is not None:
        check_keys(r["memory"], MEMORY_FIELDS, where + " memory")
        for key, _, _, when in MEMORY_FIELDS:
            if when.startswith("always (null with "):
                why = when[len("always (null with "):-1]
                assert (r["memory"][key] is None) == (why in r["memory"]), f"{where}: {key}"


def test_a_native_program_s_records_keep_to_the_table(run_shim):
    # The fixed period: every round trims (trim_us, trim_released_bytes written).
    res = run_shim([prog("fl_workload"), "--mode", "signal", "--rounds", "4", "--threads", "2",
                    "--model-mib", "16"], env={"ROUNDTRIM_ADAPTIVE": "false"})
    assert res.returncode == 0, res.stderr
    assert len(res.rounds) == 4
    for r in res.rounds:
        check_round(r, f"round {r['round']}")
    assert any("trim_us" in r and "trim_released_bytes" in r for r in res.rounds)


# Each round waits for its record (the cleanup's gc done) before the next: no round is left to
# the process's end, where gc does not run.
PY_ROUNDS = """
import ctypes, os, time
end = ctypes.CDLL(None).roundtrim_round_end
log = os.environ["ROUNDTRIM_LOG"]
def recorded():
    return open(log).read().count('"event":"round"') if os.path.exists(log) else 0
keep = []
for i in range(1, 4):
    keep.append([[j] for j in range(20000)])
    a = []; a.append(a)  # a cycle for the cleanup's gc
    del a
    end()
    deadline = time.monotonic() + 60
    while recorded() < i and time.monotonic() < deadline:
        time.sleep(0.01)
"""


def test_a_python_program_s_records_keep_to_the_table(run_shim):
    res = run_shim([PYTHON, "-c", PY_ROUNDS], env={"ROUNDTRIM_ADAPTIVE": "false"})
    assert res.returncode == 0, res.stderr
    assert len(res.rounds) >= 3
    for r in res.rounds:
        check_round(r, f"round {r['round']}")
    assert any("gc_collected" in r for r in res.rounds)  # the gc's keys were checked too


def test_the_generated_module_matches_the_table():
    """fields.py lists the .def file's rows, in order (make docs writes it)."""
    import re
    text = (ROOT / "policy" / "round_fields.def").read_text()
    rows = re.findall(r"^RT_(FIELD|TRAFFIC)\(([a-z_]+),\s*([A-Z_]+)?", text, re.M)
    assert [name for _, name, _ in rows] == [row[0] for row in ROUND_FIELDS]
    # the report's skip keys and the steps its actions column names come from the same rows
    reasons = [name for _, name, kind in rows if kind in ("REASON", "STEP_REASON")]
    assert list(SKIP_FIELDS) == reasons
    steps = re.findall(r'^RT_STEP\(([a-z_]+), ([a-z_]+), "([a-z_]*)"\)', text, re.M)
    assert sorted(skip for _, skip, _ in steps) == sorted(
        name for _, name, kind in rows if kind == "STEP_REASON")
    assert list(STEP_SKIPS) == [(label, skip) for _, skip, label in steps if label]
