"""Allocation sites at a large program's scale: more short-lived stacks than the site table has
entries (a PyTorch process's imports have thousands) must not leave a later leak without a site.
The sites that hold no live sample are given back once the table fills, and the leak's line is
named with its bytes.

The program (tests/python/sites_many_stacks.py) allocates and frees one block on each of 8000
lines in its second round, then keeps 1 MiB a round at the line marked `# leak`."""

import re
import subprocess

from conftest import PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "sites_many_stacks.py"
ROUNDTRIM = ROOT / "scripts" / "roundtrim"
LEAK_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
                 if line.endswith("# leak"))
MIB = 1024 * 1024
ROUNDS = 7
# At this mean a 64 KiB block is sampled 98 times in 100: 8000 lines give more sampled stacks
# than the table's 4096 entries; the kept 16 KiB blocks are estimated within about 5 %.
SAMPLE = "16384"


def leak_site(rec):
    for s in rec["live"]:
        if s["python"] and s["python"][0]["line"] == LEAK_LINE and \
                s["python"][0]["file"] == str(SCRIPT):
            return s
    return None


def test_a_leak_after_more_stacks_than_the_table_holds_has_its_line(run_shim):
    res = run_shim([PYTHON, SCRIPT, str(ROUNDS), "8000"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": SAMPLE},
                   timeout=180)
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.stdout_json()] == list(range(1, ROUNDS + 1))
    recs = [r for r in res.records if r.get("event") == "sites"]
    assert [r["round"] for r in recs] == list(range(1, ROUNDS + 1))
    last = recs[-1]
    site = leak_site(last)
    assert site, [s["python"][:1] for s in last["live"]]
    kept = (ROUNDS - 2) * MIB
    assert 0.8 * kept < site["live_bytes"] < 1.25 * kept, site["live_bytes"]
    assert not site.get("line_site"), site
    churn, after = recs[1], recs[2]
    # The churn round overflowed the table: samples went without a site, and the sites that
    # held none were given back after its record.
    assert churn["sites_dropped"] > 0, churn
    assert after["sites_given_back"] > 1000, after
    assert after["sites"] < 1000, after
    # From then on every sample has a site again.
    assert all(r["sites_dropped"] == 0 for r in recs[2:]), [r["sites_dropped"] for r in recs]

    # The report names the line as the first growing site, at about 1 MiB a round.
    r = subprocess.run([str(ROUNDTRIM), "report", "--sites", str(res.log_path)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.strip().startswith("1. +"))
    rate = re.search(r"\+([\d.]+) (KiB|MiB)/round", lines[first])
    assert rate, lines[first]
    mib = float(rate.group(1)) / (1024 if rate.group(2) == "KiB" else 1)
    assert 0.8 <= mib <= 1.25, lines[first]
    assert lines[first + 1].strip() == f"{SCRIPT}:{LEAK_LINE} leak_round", r.stdout
