"""A report that agrees with itself: every figure of `roundtrim report` says the rounds it covers,
no sentence rests on a minority of them, a growth that starts late is said to start where it
does, and the text, --json and --html give what keeps the memory and when it will hurt before
the breakdown. Each test runs a real program under the preloaded library and reads its report."""

import json
import os
import re
import subprocess

import pytest

from conftest import PYTHON, ROOT, prog, shim_env

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
PYDIR = ROOT / "tests" / "python"
MiB = 1 << 20
# diag_native's mode late keeps memory from this round on (LATE_ROUND in diag_native.c).
LATE_ROUND = 20


def report(*args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    res = subprocess.run([str(ROUNDTRIM), "report", *map(str, args)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def last_diagnosis(res):
    found = [r for r in res.records if r.get("event") == "diagnosis"]
    assert found, res.stderr
    return found[-1]


def native(run_shim, mode, rounds, **env):
    settings = {"ROUNDTRIM_GC_ROUNDS": "0", "ROUNDTRIM_CLEANUP_BUDGET": "0", **env}
    res = run_shim([prog("diag_native"), mode, rounds], env=settings)
    assert res.returncode == 0, res.stderr
    return res


def python(run_shim, mode, rounds, **env):
    settings = {"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_CLEANUP_BUDGET": "0", **env}
    res = run_shim([PYTHON, PYDIR / "diag_rounds.py", mode, rounds], env=settings, timeout=180)
    assert res.returncode == 0, res.stderr
    return res


def least_squares(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    return (sum((x - mx) * (y - my) for x, y in points)
            / sum((x - mx) ** 2 for x, _ in points))


# ---- where growth starts --------------------------------------------------------------------


def test_a_leak_that_starts_late_is_said_to_grow_from_the_round_it_starts(run_shim):
    """Flat until round 19, 6 MiB kept a round from round 20: the first window of rounds that
    grows is 17-22, but the growth starts at 20, and the rate is fitted from there."""
    res = native(run_shim, "late", 32)
    d = last_diagnosis(res)
    assert d["cause"] == "leak", d
    assert d["growing_since"] == LATE_ROUND, d
    assert f"from round {LATE_ROUND} on" in d["advice"], d["advice"]
    rate = re.search(r"Live memory grows ([\d.]+) MiB per round over rounds (\d+)-(\d+)",
                     d["advice"])
    assert rate and int(rate.group(2)) == LATE_ROUND, d["advice"]
    assert int(rate.group(3)) == d["last_round"], d["advice"]
    # fitted over the leaking rounds only: the 6 MiB the program keeps, not less
    assert 5.5 <= float(rate.group(1)) <= 6.5, d["advice"]


# ---- what cleanup holds flat ----------------------------------------------------------------


def gc_rounds(res, d):
    """The rounds of the diagnosis's window whose gc freed 1 MiB or more, and the window's
    length."""
    window = [r for r in res.rounds if d["first_round"] <= r["round"] <= d["last_round"]]
    return sum(1 for r in window if r.get("gc_freed_bytes", 0) >= MiB), len(window)


def test_a_gc_that_frees_in_a_few_rounds_holds_nothing_flat(run_shim):
    """Flat, but garbage made in one round in five: the gc frees megabytes in those rounds only.
    Their average is over 1 MiB a round, but a minority of rounds holds nothing flat."""
    res = python(run_shim, "garbage_rare", 20)
    d = last_diagnosis(res)
    freeing, window = gc_rounds(res, d)
    assert 0 < freeing and 2 * freeing <= window, (freeing, window)
    assert d["recovered"]["gc"] >= MiB, d  # the average that used to be said
    assert d["held"]["gc"] == 0, d
    assert "Held flat by cleanup" not in d["advice"], d["advice"]


def test_a_gc_that_frees_every_round_says_in_how_many_rounds(run_shim):
    res = python(run_shim, "garbage", 12)
    d = last_diagnosis(res)
    freeing, window = gc_rounds(res, d)
    assert 2 * freeing > window
    said = re.search(r"Held flat by cleanup: gc frees [\d.]+ MiB a round \(1 MiB or more in "
                     r"(\d+) of rounds (\d+)-(\d+)", d["advice"])
    assert said, d["advice"]
    assert [int(g) for g in said.groups()] == [freeing, d["first_round"], d["last_round"]]


def test_what_cleanup_recovers_says_in_how_many_rounds(run_shim):
    """Its figure is a mean over the window: the report says how many of the rounds gave it."""
    res = python(run_shim, "garbage_rare", 20)
    d = last_diagnosis(res)
    window = f"rounds {d['first_round']}-{d['last_round']}"
    gave = sum(1 for r in res.rounds if d["first_round"] <= r["round"] <= d["last_round"]
               and r.get("gc_freed_bytes", 0) > 0)
    line = next(l for l in report(res.log_path).splitlines() if "cleanup recovers" in l)
    assert line.startswith("    cleanup recovers ") and f"on average over {window}" in line, line
    assert re.search(rf"gc [\d.]+ MiB, in {gave} of {window}", line), (gave, line)
    doc = json.loads(report("--json", res.log_path))["processes"][0]["diagnosis"]
    assert doc["recovered_rounds"]["gc"] == gave


# ---- every figure says its window -----------------------------------------------------------


def test_each_rate_of_the_text_report_says_its_rounds(run_shim):
    res = native(run_shim, "late", 32)
    d = last_diagnosis(res)
    lines = report(res.log_path).splitlines()
    window = f"rounds {d['first_round']}-{d['last_round']}"
    verdict = lines[1]
    assert verdict.endswith(f"over {window}"), verdict
    by_part = next(l for l in lines if "heap live +" in l)
    assert by_part.startswith(f"    by part over {window}: "), by_part
    advice = next(l for l in lines if "Live memory grows" in l)
    assert f"over rounds {LATE_ROUND}-{d['last_round']}" in advice, advice
    # no rate per round without its rounds beside it
    for line in lines[1:]:
        if line.startswith("round") or re.match(r"\s+\d+\s", line):
            break  # the table
        for rate in re.finditer(r"(MiB|KiB)(/round| per round)", line):
            assert "over rounds" in line or "rounds" in line[rate.end():], line


def test_the_footer_s_trend_says_its_rounds_and_gives_the_verdict_s_measure(run_shim):
    """The footer's trend (RSS after each cleanup, all rounds) says so, and beside it the trend
    of what the verdict measures (RSS before the cleanup) over the verdict's rounds, which is the
    verdict's growth; with cleanup held back by its budget it says in how many rounds."""
    res = native(run_shim, "frag", 30, ROUNDTRIM_GC_ROUNDS="1", ROUNDTRIM_CLEANUP_BUDGET="1")
    d = last_diagnosis(res)
    lines = report(res.log_path).splitlines()
    rounds = [r for r in res.rounds if isinstance(r.get("rss_after"), int)]
    trend = next(l for l in lines if l.startswith("  RSS trend:"))
    expected = least_squares([(r["round"], r["rss_after"]) for r in rounds]) / MiB
    assert trend == (f"  RSS trend: {expected:+.2f} MiB per round over rounds "
                     f"{rounds[0]['round']}-{rounds[-1]['round']} (RSS after each round's "
                     "cleanup, all rounds)"), trend
    window = [(r["round"], r["rss_before"]) for r in rounds
              if d["first_round"] <= r["round"] <= d["last_round"]]
    before = least_squares(window) / MiB
    assert (f"  RSS before the cleanup over rounds {d['first_round']}-{d['last_round']}, the "
            f"diagnosis's (what its verdict measures): {before:+.2f} MiB per round") in lines
    # the same measure, the same rounds: the verdict's growth (RSS; no device here)
    assert abs(before - d["growth_bytes_per_round"] / MiB) <= 0.5 + abs(before) * 0.2, (before, d)
    held = sum(1 for r in res.rounds if "budget" in (r.get("gc_skipped"), r.get("trim_skipped"))
               or "pause_limit" in (r.get("gc_skipped"), r.get("trim_skipped")))
    said = [l for l in lines if l.startswith("  cleanup was held back in")]
    if held:
        assert said and said[0].startswith(f"  cleanup was held back in {held} round"), said
    else:
        assert not said
    doc = json.loads(report("--json", res.log_path))["processes"][0]
    assert doc["rss_trend_rounds"] == [rounds[0]["round"], rounds[-1]["round"]]
    assert doc["rss_before_trend_in_diagnosis_rounds"]["first_round"] == d["first_round"]
    assert doc["cleanup_held_back_rounds"] == held


# ---- what keeps it and when it hurts, first -------------------------------------------------


def test_the_holder_and_the_forecast_come_before_the_breakdown(run_shim):
    res = python(run_shim, "leak", 20)
    d = last_diagnosis(res)
    assert d["cause"] == "leak", d
    lines = report(res.log_path).splitlines()
    holder = next(i for i, l in enumerate(lines) if l.startswith("    holder: "))
    forecast = next(i for i, l in enumerate(lines) if l.startswith("    forecast: "))
    by_part = next(i for i, l in enumerate(lines) if l.startswith("    by part"))
    assert holder < by_part and forecast < by_part, lines[:8]
    assert "__main__.keep" in lines[holder]
    doc = json.loads(report("--json", res.log_path))["processes"][0]["diagnosis"]
    keys = list(doc)
    assert keys.index("holders") < keys.index("slopes"), keys
    assert keys.index("forecast") < keys.index("slopes"), keys
    assert keys.index("forecast") < keys.index("shares"), keys


# ---- the page -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A Python leak (its holder and forecast) and a native program whose last round is recorded
    while it exits (no pause after its rounds: that round's memory is not broken down), in one
    log, and its page."""
    tmp = tmp_path_factory.mktemp("page")
    log = tmp / "rt.jsonl"
    env = shim_env({"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_CLEANUP_BUDGET": "0"}, log_path=log)
    subprocess.run([PYTHON, PYDIR / "diag_rounds.py", "leak", "20"], env=env, check=True,
                   timeout=180, capture_output=True)
    subprocess.run([prog("diag_native"), "frag", "12", "0"], env=env, check=True, timeout=120,
                   capture_output=True)
    out = tmp / "report.html"
    report("--html", out, log)
    records = [json.loads(l) for l in log.read_text().splitlines()]
    sections = re.findall(r'<section class="process" data-pid="(\d+)">(.*?)</section>',
                          out.read_text(), re.S)
    return records, {int(pid): body for pid, body in sections}


def rounds_of(records, pid):
    return [r for r in records if r.get("event") == "round" and r["pid"] == pid]


def test_the_page_gives_the_holder_and_the_forecast_before_the_breakdown(page):
    records, sections = page
    leak = next(body for body in sections.values() if 'data-cause="leak"' in body)
    holder = leak.index('<p class="holder">holder: __main__.keep')
    forecast = leak.index('<p class="forecast">forecast: ')
    assert holder < leak.index('<pre class="advice">') and forecast < leak.index("<svg")
    assert leak.index("by part over rounds") > max(holder, forecast)


def test_the_chart_has_an_axis_of_rounds_labelled_every_few_rounds(page):
    records, sections = page
    for pid, body in sections.items():
        numbers = [r["round"] for r in rounds_of(records, pid)]
        labels = [int(t) for t in re.findall(r'class="tick-label"[^>]*>(\d+)</text>', body)]
        assert len(labels) >= 5 and labels == sorted(labels), labels
        assert set(labels) <= set(numbers) and labels[-1] == numbers[-1], (labels, numbers)
        gaps = {b - a for a, b in zip(labels, labels[1:-1])}  # the last may be closer
        assert len(gaps) == 1, labels  # every few rounds: one step between the labels
        assert '>round</text>' in body


def exiting_last_round(log):
    """The log with its last round as a round recorded while the process exits writes it (no
    breakdown: memory_skipped exiting), where the run's own last round was not."""
    lines = log.read_text().splitlines()
    at = max(i for i, l in enumerate(lines) if json.loads(l).get("event") == "round")
    rec = json.loads(lines[at])
    rec.pop("memory", None)
    rec["memory_skipped"] = "exiting"
    lines[at] = json.dumps(rec)
    log.write_text("\n".join(lines) + "\n")


def test_the_chart_takes_the_whole_width_and_has_a_bar_for_every_round(tmp_path):
    log = tmp_path / "rt.jsonl"
    env = shim_env({"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_CLEANUP_BUDGET": "0"}, log_path=log)
    subprocess.run([prog("diag_native"), "frag", "12", "0"], env=env, check=True, timeout=120,
                   capture_output=True)
    exiting_last_round(log)
    out = tmp_path / "report.html"
    report("--html", out, log)
    body = out.read_text()
    svg = re.search(r"<svg [^>]*>", body).group(0)
    width = int(re.search(r'viewBox="0 0 (\d+) \d+"', svg).group(1))
    assert "svg.chart { width: 100%;" in body  # drawn to the page's width
    bars = {}
    for kind, x, w in re.findall(r'<rect class="(part|unmeasured)"[^>]*? x="([\d.]+)"[^>]*? '
                                 r'width="([\d.]+)"', body):
        bars[float(x)] = (kind, float(w))
    rounds = [json.loads(l) for l in log.read_text().splitlines()]
    rounds = [r for r in rounds if r.get("event") == "round"]
    assert len(bars) == len(rounds)  # one bar a round, the last one included
    last = max(bars)
    assert bars[last][0] == "unmeasured"
    # the plot runs to the chart's right edge, less its margin
    assert last + bars[last][1] >= 0.97 * width


def test_rss_before_and_after_the_cleanup_are_two_lines(page):
    _, sections = page
    for body in sections.values():
        before = re.search(r'<polyline class="line rss-before"[^>]*>', body).group(0)
        after = re.search(r'<polyline class="line rss-after"[^>]*>', body).group(0)
        assert "stroke-dasharray" in before and "stroke-dasharray" not in after
        assert "RSS after cleanup: below the dashed line by what cleanup gave back" in body


def test_the_rounds_are_a_table_behind_a_disclosure(page):
    records, sections = page
    for pid, body in sections.items():
        table = re.search(r'<details class="rounds"><summary>(.*?)</summary>(.*?)</details>',
                          body, re.S)
        assert table, body[:500]
        rows = re.findall(r"<tr><td>(\d+)</td>", table.group(2))
        assert [int(r) for r in rows] == [r["round"] for r in rounds_of(records, pid)]


def test_what_the_log_says_in_the_table_is_escaped(tmp_path, page):
    log = tmp_path / "rt.jsonl"
    env = shim_env({"ROUNDTRIM_GC_ROUNDS": "0"}, log_path=log)
    subprocess.run([prog("diag_native"), "flat", "4"], env=env, check=True, timeout=60,
                   capture_output=True)
    pid = json.loads(log.read_text().splitlines()[0])["pid"]
    with open(log, "a") as f:
        f.write(json.dumps({"event": "round", "pid": pid, "ts": 2e9, "round": 5,
                            "source": "<img src=x onerror=alert(1)>", "rss_before": 1 << 24,
                            "rss_after": 1 << 24, "cleanup": ["</table><script>x()</script>"],
                            "cleanup_us": 10}) + "\n")
    out = tmp_path / "report.html"
    report("--html", out, log)
    text = out.read_text()
    assert "<img" not in text and "<script" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
