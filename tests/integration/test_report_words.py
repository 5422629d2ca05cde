"""The report's table explains its own words: what "freed" is (and why it may be negative), and
what each reason a cleanup step was left out means, for the reasons the table shows."""

import json
import re
import subprocess
import sys

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
    assert legend[4] == "    something_new: see the round log's reference (docs/reference/round-log.md)"


def test_old_words_for_a_reason_are_read_as_today_s(tmp_path):
    """A log of an older version says cuda_no_context where today's says no_context: the table
    shows, and the legend explains, today's word."""
    log = tmp_path / "rt.jsonl"
    write_log(log, [("not_python", None), (None, "cuda_no_context")])
    lines = report(log)
    assert not [l for l in lines if "not_python" in l or "cuda_no_context" in l]
    at = lines.index("  skipped steps (actions column):")
    assert lines[at + 1:at + 3] == ["    no_python: not a Python process",
                                    "    no_context: no CUDA context of the program could be "
                                    "entered"]


def table_words(kind):
    text = (ROOT / "policy" / "skip_reasons.def").read_text()
    if kind == "reason":
        return set(re.findall(r"^RT_SKIP_REASON\(([a-z_]+),", text, re.M))
    return dict(re.findall(r"^RT_SKIP_OLD_WORD\(([a-z_]+), ([a-z_]+)\)", text, re.M))


# Literals in the library's C that spell a reason's word and mean something else.
NOT_REASONS = {("runtime/python/round_hook_audit.c", "exec"),  # the audit event
               ("runtime/python/holders.c", "exec"),     # the builtin
               ("runtime/rounds/round_exit.c", "exec"),  # the record's event
               ("runtime/python/round_hook_bind.c", "failed"),  # a hook's binding message
               ("policy/diagnosis.c", "not_yet"),  # decided_by: too few rounds for a verdict
               ("policy/hook_spec.c", "off"), ("policy/parse.c", "off"),  # a setting's value
               ("runtime/alloc/allocator_ops.c", "malloc"),  # the symbol looked up
               ("runtime/alloc/next_alloc.c", "malloc"),
               ("runtime/core/real_dlsym.c", "malloc")}


def test_the_library_says_reasons_only_through_the_table():
    """Reasons are enum roundtrim_skip values (policy/skip_reason.h), so the compiler refuses one
    without a row in policy/skip_reasons.def; a reason written as a string literal would pass by
    it, and fails here. The report's legend is the table, regenerated."""
    words = table_words("reason") | set(table_words("old"))
    assert {"no_yield", "little_to_gain", "budget", "exiting", "no_python"} <= words
    literals = set()
    for folder in ("policy", "runtime", "shim"):
        for path in sorted((ROOT / folder).rglob("*.[ch]")):
            code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)
            name = str(path.relative_to(ROOT))
            literals |= {(name, w) for w in re.findall(r'"([a-z_]+)"', code) if w in words}
    assert literals - NOT_REASONS == set(), "reasons written as literals, not RT_SKIP_<name>"
    sys.path.insert(0, str(ROOT / "scripts"))
    from roundtrim_report.fields import SKIP_REASON_OLD_WORDS, SKIP_REASONS
    assert set(SKIP_REASONS) == table_words("reason")
    assert SKIP_REASON_OLD_WORDS == table_words("old")


def flat_log_with_one_low_round(path):
    """Rounds 1-10 of a process whose memory is flat but for round 2, read before its heap had
    filled: freed heap 20 MiB there, about 60 MiB in every other round. No diagnosis record: the
    report computes the verdict with the library's code (roundtrim-diagnose)."""
    wiggle = [0, -40, 1, -1, 0, 2, -1, 1, 0, -2]
    records = [{"event": "start", "pid": 7, "ts": 100.0, "role": "client", "allocator": "glibc"}]
    for i, w in enumerate(wiggle, 1):
        memory = {"heap_live": 200 * MIB, "heap_free": (60 + w) * MIB, "python": None,
                  "python_skipped": "no_python", "other_anon": 20 * MIB, "file": 40 * MIB,
                  "shmem": 0, "device_live": None, "device_live_skipped": "no_cuda",
                  "device_cached": None, "device_cached_skipped": "no_cuda"}
        memory["rss"] = sum(v for v in memory.values() if isinstance(v, int))
        records.append({"event": "round", "pid": 7, "ts": 100.0 + i, "round": i,
                        "source": "call", "rss_before": memory["rss"],
                        "rss_after": 262 * MIB, "heap_live": 200 * MIB, "memory": memory,
                        "cleanup": ["trim"], "cleanup_us": 1500,
                        "trim_released_bytes": memory["heap_free"] - 2 * MIB})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_no_growth_is_not_said_beside_a_rising_figure(tmp_path):
    """The fit over rounds 2-10 rises (+2.6 MiB/round, all from round 2): the verdict is none,
    and the diagnosis line says the memory is flat within the rounds' noise, with no rate."""
    log = tmp_path / "rt.jsonl"
    flat_log_with_one_low_round(log)
    r = subprocess.run([ROUNDTRIM, "report", "--json", log], capture_output=True, text=True,
                       timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)["processes"][0]["diagnosis"]
    assert d["cause"] == "none" and d["computed_by"] == "report", d
    assert d["growth_bytes_per_round"] > 2 * MIB, d  # the fit the old line printed
    assert d["growth_noise_bytes_per_round"] >= d["growth_bytes_per_round"], d
    line = next(l for l in report(log) if l.startswith("  diagnosis:"))
    assert line.startswith("  diagnosis: no growth; memory flat over rounds 2-10 (within noise: "
                           "+/-"), line
    assert not re.search(r"\+\d+\.\d\d MiB/round", line), line


def test_the_diagnosis_option_names_every_verdict_the_library_gives():
    """ROUNDTRIM_DIAG_ROUNDS's meaning (the README's table, `roundtrim env`, the manual page) lists
    the verdicts in words: every cause policy/diag_causes.def marks a verdict, and nothing else."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from roundtrim_report.fields import DIAG_CAUSES, DIAG_VERDICTS
    text = (ROOT / "policy" / "options.def").read_text()
    entry = re.search(r"ROUNDTRIM_OPTION\(DIAG_ROUNDS,.*?\)\n\n", text, re.S).group(0)
    meaning = " ".join(re.findall(r'"([^"]*)"', entry.split(".meaning", 1)[1]))
    named = {c for c in DIAG_CAUSES if re.search(rf"\b{c}\b", meaning)}
    assert named == set(DIAG_VERDICTS), meaning


def test_the_words_the_report_acts_on_are_the_library_s():
    """The report compares a few of the library's words (a headroom's limit, the advice's
    sentence on sites, the diagnosis's reasons): each is a row of the tables it is printed from."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from roundtrim_report import diagnosis, fields
    assert diagnosis.CGROUP in fields.HEADROOM_OF
    assert diagnosis.SITES_SAMPLED in fields.SITES_SAID
    assert {"too_few_rounds", "no_breakdown", "no_growth"} <= set(fields.DIAG_REASONS)
    assert fields.DIAG_MIN_ROUNDS >= 1
