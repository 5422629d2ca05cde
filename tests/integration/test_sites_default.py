"""With default settings, a leak is named both by what keeps it and by the code that allocates
it, in the first run: allocation sampling starts by itself at the first verdict of growth, and
never in a process whose memory stays flat.

The program (tests/python/holder_kinds.py) keeps a 1 MiB NumPy array a round in an attribute's
list (mode attribute); the array is made by numpy.ones at the line of `update` that calls it.
Its healthy mode keeps nothing."""

import json
import subprocess

from conftest import PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "holder_kinds.py"
ROUNDTRIM = ROOT / "scripts" / "roundtrim"
UPDATE_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
                   if line.endswith("# 1 MiB, written"))


def run(run_shim, mode, rounds=16, **env):
    res = run_shim([PYTHON, SCRIPT, mode, rounds],
                   env={"ROUNDTRIM_CLEANUP_BUDGET": "0", **env}, timeout=180)
    assert (res.returncode, res.stdout) == (0, "done\n"), res.stderr
    return res


def test_a_leak_is_named_by_holder_and_allocating_line_without_a_rerun(run_shim):
    res = run(run_shim, "attribute")
    (start,) = [r for r in res.records if r.get("event") == "start"]
    assert start["settings"]["ROUNDTRIM_SITES"]["source"] == "default", start["settings"]
    sites = [r for r in res.records if r.get("event") == "sites"]
    # Sampling started with the first verdict of growth (a leak here), not before; that
    # verdict's advice already points at the sites.
    first_leak = next(r for r in res.records
                      if r.get("event") == "diagnosis" and r["cause"] == "leak")
    assert sites and sites[0]["round"] == first_leak["round"], \
        ([r["round"] for r in sites], first_leak["round"])
    assert "The sites records name the code that allocates it" in first_leak["advice"]
    assert all(r["sampling_since"] == first_leak["round"] for r in sites), sites[0]

    js = subprocess.run([str(ROUNDTRIM), "report", "--json", str(res.log_path)],
                        capture_output=True, text=True, timeout=120)
    assert js.returncode == 0, js.stderr
    (proc,) = json.loads(js.stdout)["processes"]
    d = proc["diagnosis"]
    assert d["cause"] == "leak", d
    assert d["holders"][0]["path"] == "__main__.CLIENT.history", d["holders"]
    site = d["sites"][0]
    # Named by the program's line that calls numpy (numpy's own frame is innermost), about
    # 1 MiB a round.
    assert site["name"] == f"update (holder_kinds.py:{UPDATE_LINE})", site
    assert "numpy" in site["stack"][0], site["stack"]
    assert 0.5 * (1 << 20) < site["bytes_per_round"] < 2 * (1 << 20), site
    assert d["sites_since"] == first_leak["round"], d
    text = subprocess.run([str(ROUNDTRIM), "report", str(res.log_path)], capture_output=True,
                          text=True, timeout=120)
    assert f"sites sampled from round {first_leak['round']}" in text.stdout, text.stdout
    assert f"growing site 1: update (holder_kinds.py:{UPDATE_LINE})" in text.stdout, text.stdout


def test_a_flat_process_never_samples(run_shim):
    res = run(run_shim, "healthy")
    assert not [r for r in res.records if r.get("event") == "sites"]
    diags = [r for r in res.records if r.get("event") == "diagnosis"]
    assert diags and all(r["cause"] != "leak" for r in diags), diags


def test_sites_false_never_samples_even_a_leak(run_shim):
    res = run(run_shim, "attribute", ROUNDTRIM_SITES="false")
    assert not [r for r in res.records if r.get("event") == "sites"]
