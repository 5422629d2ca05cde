"""Allocation sites (ROUNDTRIM_SITES): sampled by bytes, written after each round record, and
read back as a user would: which call site keeps memory from round to round, and how much."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import LIB, prog

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
MIB = 1024 * 1024


def sites_records(res):
    return [r for r in res.records if r.get("event") == "sites"]


def function_at(module, offset):
    """The function an offset of a binary falls in, from its symbol table (nm), or None."""
    out = subprocess.run(["nm", "--defined-only", module], capture_output=True, text=True).stdout
    best = None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            addr = int(parts[0], 16)
            if addr <= offset and (best is None or addr > best[0]):
                best = (addr, parts[2])
    return best[1] if best else None


def site_function(site, module):
    """The innermost frame of the site that lies in `module`, as a function name."""
    for f in site["frames"]:
        if f["module"] == module:
            return function_at(module, int(f["offset"], 16))
    return None


def site_of(rec, module, function, key="live"):
    for s in rec[key]:
        if site_function(s, module) == function:
            return s
    return None


def test_sampling_is_off_by_default_and_says_so(run_shim):
    res = run_shim([prog("site_mix"), "--rounds", "2", "--churn-mib", "4"])
    assert res.returncode == 0, res.stderr
    start = next(r for r in res.records if r["event"] == "start")
    assert start["sites_skipped"] == "off"
    assert sites_records(res) == []
    assert len(res.rounds) == 2


def test_a_sites_record_follows_every_round_record(run_shim):
    res = run_shim([prog("site_mix"), "--rounds", "4", "--churn-mib", "8"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "65536"})
    assert res.returncode == 0, res.stderr
    start = next(r for r in res.records if r["event"] == "start")
    assert start["sites_skipped"] is None
    events = [r["event"] for r in res.records if r["event"] in ("round", "sites")]
    assert events == ["round", "sites"] * 4
    recs = sites_records(res)
    assert [r["round"] for r in recs] == [1, 2, 3, 4]
    for r in recs:
        assert r["sample_bytes"] == 65536
        assert r["samples"] > 0 and r["samples_dropped"] == 0 and r["sites_dropped"] == 0
        assert r["python_frames_skipped"] == "no_python"
        for key in ("grown", "round_live", "live"):
            for s in r[key]:
                assert len(s["site"]) == 16
                assert s["frames"], s
                assert all(f["module"] and f["offset"].startswith("0x") for f in s["frames"])
    # Samples are counted over the whole run: they only grow.
    assert [r["samples"] for r in recs] == sorted(r["samples"] for r in recs)


def test_estimates_match_the_bytes_each_site_holds(run_shim):
    """keep_blocks keeps 4 MiB more each round in 4 KiB blocks, swap_model holds one 4 MiB
    block (always sampled, so exact), the churn frees everything it allocates."""
    exe = prog("site_mix")
    res = run_shim([exe, "--rounds", "4", "--keep-kib", "4096", "--block", "4096",
                    "--churn-mib", "16"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "32768"})
    assert res.returncode == 0, res.stderr
    last = sites_records(res)[-1]
    keep = site_of(last, exe, "keep_blocks")
    model = site_of(last, exe, "swap_model")
    assert keep and model, json.dumps(last)[:2000]
    # 16 MiB kept in 4 KiB blocks at a mean of 32 KiB: about 512 samples, a 4.4 % error.
    assert 0.8 * 16 * MIB < keep["live_bytes"] < 1.2 * 16 * MIB
    assert 0.7 * 4 * MIB < keep["round_live_bytes"] < 1.3 * 4 * MIB
    # One block far above the mean stands for itself: its usable size, within a page.
    assert 4 * MIB <= model["live_bytes"] <= 4 * MIB + 8192
    assert model["round_live_bytes"] == model["live_bytes"]
    assert abs(model["grown_bytes"]) <= 8192  # replaced, not grown
    # The churn's blocks are all freed by the end of each round.
    assert all(site_function(s, exe) not in ("churn",) for s in last["live"])
    # The growing site leads the growth list.
    assert site_function(last["grown"][0], exe) == "keep_blocks"


def test_planted_leak_is_the_top_growing_site_within_five_rounds(run_shim):
    """1 MiB more kept each round among 100 MiB of churn, at the default mean (512 KiB)."""
    exe = str(prog("site_leak"))
    res = run_shim([exe, "--rounds", "5", "--churn-mib", "100"],
                   env={"ROUNDTRIM_SITES": "true"})
    assert res.returncode == 0, res.stderr
    recs = sites_records(res)
    assert len(recs) == 5

    def live_of(rec):
        out = {}
        for s in rec["live"]:
            out[s["site"]] = (s["live_bytes"], site_function(s, exe))
        return out

    first, last = live_of(recs[0]), live_of(recs[-1])
    growth = {k: v[0] - first.get(k, (0, None))[0] for k, v in last.items()}
    top = max(growth, key=growth.get)
    assert last[top][1] == "cache_round_result", (growth, last)
    # 4 MiB more over rounds 1..5: about 7.5 samples of 557 KiB each; bounds at 1 and 18
    # samples (each side under 0.1 % likely).
    assert 0.5 * MIB < growth[top] < 10 * MIB


def test_threads_realloc_and_fork_child_are_sampled(run_shim):
    exe = prog("site_mix")
    res = run_shim([exe, "--rounds", "3", "--threads", "4", "--churn-mib", "32", "--fork"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "65536"})
    assert res.returncode == 0, res.stderr
    assert res.stdout_json()[-1] == {"child_status": 0}
    recs = sites_records(res)
    pids = sorted({r["pid"] for r in recs})
    assert len(pids) == 2
    child = [r for r in recs if r["pid"] != recs[0]["pid"]]
    assert [r["round"] for r in child] == [1, 2]
    for r in recs:
        assert site_of(r, exe, "keep_blocks") is not None
    # realloc'd blocks are forgotten when moved: the model's site holds one model, not three.
    parent_last = [r for r in recs if r["pid"] == recs[0]["pid"]][-1]
    assert site_of(parent_last, exe, "swap_model")["live_bytes"] <= 4 * MIB + 8192


@pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 is not installed")
def test_sites_are_sampled_with_jemalloc_after_roundtrim(run_shim):
    exe = prog("site_mix")
    res = run_shim([exe, "--rounds", "3", "--keep-kib", "2048", "--churn-mib", "8"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "32768",
                        "LD_PRELOAD": f"{LIB} {JEMALLOC}"})
    assert res.returncode == 0, res.stderr
    last = sites_records(res)[-1]
    keep = site_of(last, exe, "keep_blocks")
    assert keep and 0.7 * 6 * MIB < keep["live_bytes"] < 1.3 * 6 * MIB


def test_bad_sample_size_warns_once_and_uses_the_default(run_shim):
    res = run_shim([prog("site_mix"), "--rounds", "1", "--churn-mib", "2"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "12kb"})
    assert res.returncode == 0
    warnings = [l for l in res.stderr.splitlines() if "ROUNDTRIM_SITES_SAMPLE" in l]
    assert len(warnings) == 1 and "12kb" in warnings[0] and "524288" in warnings[0]
    assert sites_records(res)[0]["sample_bytes"] == 524288


def test_cxx_exceptions_keep_the_c_runtime_unwinder(run_shim, tmp_path):
    """libunwind also defines _Unwind_RaiseException: loaded for stacks, it must not take C++
    exceptions over from libgcc_s."""
    res = run_shim([prog("cxx_counts")],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "4096",
                        "LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": str(tmp_path / "ld")})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.splitlines()[-1])["bad_alloc_caught"] is True
    bindings = "".join(p.read_text() for p in tmp_path.glob("ld.*"))
    raise_lines = [l for l in bindings.splitlines()
                   if "`_Unwind_RaiseException'" in l and "normal symbol" in l]
    assert raise_lines, "no binding of _Unwind_RaiseException seen"
    assert all("libgcc_s" in l.split(" to ")[1] for l in raise_lines), raise_lines
    assert sites_records(res), "sampling did not run"


@pytest.mark.skipif(not shutil.which("addr2line"), reason="addr2line is not installed")
def test_frames_resolve_to_file_and_line(run_shim):
    """A frame's module and offset are what addr2line takes: the planted site's file:line."""
    exe = str(prog("site_leak"))
    res = run_shim([exe, "--rounds", "3", "--churn-mib", "20"],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "65536"})
    assert res.returncode == 0, res.stderr
    last = sites_records(res)[-1]
    leak = site_of(last, exe, "cache_round_result")
    assert leak
    frame = next(f for f in leak["frames"] if f["module"] == exe)
    out = subprocess.run(["addr2line", "-f", "-e", exe, frame["offset"]],
                         capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "cache_round_result"
    assert out[1].split("/")[-1].startswith("site_leak.c:")


def test_report_names_the_planted_leak_with_file_and_line(run_shim):
    """End to end, as a user runs it: five rounds of the C program with its planted leak among
    100 MiB of churn per round, then `roundtrim report --sites` on the log."""
    from conftest import ROOT

    exe = str(prog("site_leak"))
    res = run_shim([exe, "--rounds", "5", "--churn-mib", "100"], env={"ROUNDTRIM_SITES": "true"})
    assert res.returncode == 0, res.stderr
    rep = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", "--sites",
                          str(res.log_path)], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.strip().startswith("1. +"))
    assert "/round" in lines[first]
    assert "cache_round_result at " in lines[first + 1] and "site_leak.c:" in lines[first + 1]


def test_python_leak_is_named_by_file_line_and_function(run_shim):
    """The Python planted leak (keep_round_results keeps 1 MiB more per round among 100 MiB of
    bytes/bytearray churn): its sites carry Python frames, and the report names the function
    with its file and line after five rounds."""
    from conftest import PYTHON, ROOT

    script = ROOT / "tests" / "python" / "site_leak.py"
    res = run_shim([PYTHON, script, "--rounds", "5", "--churn-mib", "100"],
                   env={"ROUNDTRIM_SITES": "true"}, timeout=120)
    assert res.returncode == 0, res.stderr
    recs = sites_records(res)
    assert len(recs) == 5 and all(r["python_frames_skipped"] is None for r in recs)
    named = [s for s in recs[-1]["live"]
             if any(f["function"] == "keep_round_results" for f in s["python"])]
    assert named, json.dumps(recs[-1])[:3000]
    frame = next(f for f in named[0]["python"] if f["function"] == "keep_round_results")
    assert frame["file"] == str(script)
    source = script.read_text().splitlines()
    assert "bytearray(64 * 1024)" in source[frame["line"] - 1]
    rep = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", "--sites",
                          str(res.log_path)], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.strip().startswith("1. +"))
    stack = "\n".join(lines[first + 1:first + 4])
    assert f"{script}:{frame['line']} keep_round_results" in stack, rep.stdout


def test_without_libunwind_python_leaks_are_still_named_by_line(run_shim, tmp_path):
    """A machine without libunwind (the GPU images): sampling runs on the Python frames, which need
    no native unwinding; the start record, each sites record and the report say that native
    frames were not taken. A stand-in libunwind.so.8 without unw_backtrace, found first through
    LD_LIBRARY_PATH, makes the machine one without it."""
    from conftest import PYTHON, ROOT

    stand_in = tmp_path / "lib"
    stand_in.mkdir()
    source = tmp_path / "not_libunwind.c"
    source.write_text("int roundtrim_test_not_libunwind;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libunwind.so.8", source, "-o",
                    stand_in / "libunwind.so.8"], check=True)
    script = ROOT / "tests" / "python" / "site_leak.py"
    res = run_shim([PYTHON, script, "--rounds", "5", "--churn-mib", "100"],
                   env={"ROUNDTRIM_SITES": "true", "LD_LIBRARY_PATH": str(stand_in)},
                   timeout=120)
    assert res.returncode == 0, res.stderr
    start = next(r for r in res.records if r["event"] == "start")
    assert start["sites_skipped"] is None
    assert start["sites_native_skipped"] == "libunwind_missing"
    recs = sites_records(res)
    assert len(recs) == 5
    assert all(r["native_frames_skipped"] == "libunwind_missing" for r in recs)
    named = [s for s in recs[-1]["live"]
             if any(f["function"] == "keep_round_results" for f in s["python"])]
    assert named and all(s["frames"] == [] for s in recs[-1]["live"]), json.dumps(recs[-1])[:3000]
    rep = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", "--sites",
                          str(res.log_path)], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert "native frames not taken: libunwind is missing" in rep.stdout
    assert "site_leak.py" in rep.stdout and "keep_round_results" in rep.stdout, rep.stdout
