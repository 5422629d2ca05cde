"""The report's table explains its own words: what "freed" is (and why it may be negative), and
what each reason a cleanup step was left out means, for the reasons the table shows."""

import json
import re
import subprocess

from conftest import ROOT
from roundtrim_report import __main__ as report_main

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
MIB = 1 << 20


def write_log(path, skips):
    """A start record and one cleanup round per (gc_skipped, trim_skipped) pair; the second round
    ends 1 MiB higher than it began (the program allocated during the cleanup)."""
    records = [{"event": "start", "pid": 7, "ts": 100.0, "role": "client", "allocator": "glibc"}]
    for i, (gc, trim) in enumerate(skips, 1):
        records.append({"event": "round", "pid": 7, "ts": 100.0 + i, "round": i, "source": "call",
                        "rss_before": 100 * MIB, "rss_after": (101 if i == 2 else 90) * MIB,
                        "cleanup": ["gc"], "cleanup_us": 1500, "gc_skipped": gc,
                        "trim_skipped": trim})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def report(path):
    r = subprocess.run([ROUNDTRIM, "report", path], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "ROUNDTRIM_PLOTTER": "none"})
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_the_table_says_what_freed_is_and_why_it_may_be_negative(tmp_path):
    log = tmp_path / "rt.jsonl"
    write_log(log, [(None, None), (None, None)])
    lines = report(log)
    row = next(l for l in lines if re.match(r"\s+2\s", l))
    assert " -1.0 " in row
    assert ("  freed: RSS before the cleanup minus RSS after it; the program runs on meanwhile, so "
            "a negative figure means it allocated more during the cleanup than the cleanup gave "
            "back, not that the cleanup took memory") in lines
    assert not [l for l in lines if "skipped steps" in l]  # nothing skipped: no legend


def test_each_skip_reason_shown_is_explained_once_in_the_order_shown(tmp_path):
    log = tmp_path / "rt.jsonl"
    write_log(log, [("no_yield", "little_to_gain"), (None, "budget"), ("no_yield", "pause_limit"),
                    (None, "something_new")])
    lines = report(log)
    at = lines.index("  skipped steps (actions column):")
    legend = lines[at + 1:at + 6]
    assert [l.split(":")[0].strip() for l in legend] == [
        "no_yield", "little_to_gain", "budget", "pause_limit", "something_new"]
    assert "ROUNDTRIM_CLEANUP_BUDGET" in legend[2]
    assert "ROUNDTRIM_TRIM_PAUSE_MS" in legend[3]
    assert legend[4] == "    something_new: see the round log in the README"


def test_every_reason_the_cleanup_policy_gives_has_words():
    """A reason added to the policy without words in the report's legend fails here."""
    source = (ROOT / "policy" / "cleanup_policy.c").read_text()
    reasons = set(re.findall(r'(?:return|=)\s*"([a-z_]+)"', source))
    assert {"no_yield", "little_to_gain", "pause_limit", "budget"} <= reasons
    missing = sorted(r for r in reasons if r not in report_main.SKIP_MEANINGS)
    assert not missing, f"reasons without words in SKIP_MEANINGS: {missing}"
