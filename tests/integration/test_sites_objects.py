"""Allocation sites of small Python objects: dicts and tuples of 512 bytes or less come from
pymalloc's arenas, which malloc never sees; the object allocator is wrapped and sampled so that
a leak of them is named by its line with about its bytes.

The program (tests/python/sites_small_objects.py) keeps 20,000 small dicts holding a tuple each
round at the line marked `# leak`, among ten times as many made and dropped at other lines."""

import re
import subprocess

import pytest

from conftest import BUILD, PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "sites_small_objects.py"
ROUNDTRIM = ROOT / "scripts" / "roundtrim"
LEAK_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
                 if line.endswith("# leak"))
ROUNDS = 6
# About 330 samples a round of what is kept at this mean: the estimate is within a few percent.
SAMPLE = "16384"


def run(run_shim, *options, env=None):
    res = run_shim([PYTHON, *options, SCRIPT, str(ROUNDS)],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": SAMPLE,
                        "PYTHONPATH": str(ROOT / "tests" / "python"), **(env or {})},
                   timeout=180)
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()
    assert [r["round"] for r in out] == list(range(1, ROUNDS + 1))
    recs = [r for r in res.records if r.get("event") == "sites"]
    assert [r["round"] for r in recs] == list(range(1, ROUNDS + 1))
    return res, out, recs


def leak_line_live(rec):
    """The live bytes of the sites whose innermost Python frame is the leak's line."""
    return sum(s["live_bytes"] for s in rec["live"]
               if s["python"] and s["python"][0]["file"] == str(SCRIPT)
               and s["python"][0]["line"] == LEAK_LINE)


def report_top(log):
    r = subprocess.run([str(ROUNDTRIM), "report", "--sites", str(log)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.strip().startswith("1. +"))
    return lines[first], lines[first + 1].strip(), r.stdout


@pytest.mark.parametrize("options", [(), ("-X", "dev")], ids=["default", "dev_mode"])
def test_a_leak_of_small_objects_is_named_by_its_line_with_its_bytes(run_shim, options):
    res, out, recs = run(run_shim, *options)
    kept = out[-1]["kept_bytes"]
    live = leak_line_live(recs[-1])
    assert kept / 2 < live < kept * 2, (live, kept)
    heading, first_frame, text = report_top(res.log_path)
    assert first_frame == f"{SCRIPT}:{LEAK_LINE} leak", text
    rate = re.search(r"\+([\d.]+) (KiB|MiB)/round", heading)
    per_round = (out[-1]["kept_bytes"] - out[1]["kept_bytes"]) / (ROUNDS - 2) / 2**20
    assert rate, heading
    mib = float(rate.group(1)) / (1024 if rate.group(2) == "KiB" else 1)
    assert per_round / 2 < mib < per_round * 2, (heading, per_round)
    # The object allocator is wrapped once the interpreter runs (after the first round).
    assert recs[0]["python_objects_skipped"] == "not_yet"
    assert all(r["python_objects_skipped"] is None for r in recs[1:]), recs[-1]


def test_tracemalloc_keeps_its_allocator_and_the_program_runs_as_without(run_shim):
    """tracemalloc's hooks in place: wrapping them would be undone when it stops, so the object
    allocator is left alone and the record says why."""
    res, out, recs = run(run_shim, env={"PYTHONTRACEMALLOC": "1"})
    assert all(r["python_objects_skipped"] == "allocator_custom" for r in recs[1:]), recs[-1]
    assert out[-1]["kept_bytes"] > 20 * 2**20


REPLACED = ROOT / "tests" / "python" / "sites_objects_replaced.py"
TOOL = BUILD / "tests" / "libobject_allocator_tool.so"
CACHED_LINE = next(n for n, line in enumerate(REPLACED.read_text().splitlines(), 1)
                   if line.endswith("# cached"))


def test_objects_freed_past_the_wrapper_are_no_phantom_leak(run_shim):
    """A tool's allocator put in place after roundtrim's wrapper, calling the one it saved before:
    the cache's objects sampled in rounds 2 and 3 are freed in round 5 where the first wrapper
    does not see it. The wrapper is put back on top, the objects sampled before it are no longer
    counted, and the line that filled the cache is not left holding them."""
    rounds = 8
    res = run_shim([PYTHON, REPLACED, TOOL, str(rounds)],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": SAMPLE,
                        "PYTHONPATH": str(ROOT / "tests" / "python")}, timeout=180)
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()
    assert [o["cached"] for o in out] == [0, 20000, 40000, 60000, 0, 0, 0, 0]
    # the tool's allocator keeps serving the program's objects after the wrapper went on top
    assert out[-1]["tool_calls"] > out[4]["tool_calls"] > out[3]["tool_calls"] > 0
    recs = [r for r in res.records if r.get("event") == "sites"]

    def cached_live(rec):
        return sum(s["live_bytes"] for s in rec["live"]
                   if s["python"] and s["python"][0]["file"] == str(REPLACED)
                   and s["python"][0]["line"] == CACHED_LINE)

    # sampled while the first wrapper was reached: the cache's 40,000 objects of rounds 2 and 3
    assert cached_live(recs[2]) > 2 * 2**20, recs[2]
    # put back after round 4's record: counted from round 5, nothing left at the line
    assert [r["python_objects_skipped"] for r in recs[1:]] == [None] * (rounds - 1)
    assert [r["python_objects_since"] for r in recs[1:4]] == [2, 2, 2]
    assert all(r["python_objects_since"] == 5 for r in recs[4:]), recs[-1]
    assert cached_live(recs[-1]) < 64 * 1024, recs[-1]
    report = subprocess.run([str(ROUNDTRIM), "report", "--sites", str(res.log_path)],
                            capture_output=True, text=True, timeout=180)
    assert report.returncode == 0, report.stderr
    assert "small Python objects counted from round 5: a tool's allocator went past" \
        in report.stdout, report.stdout
