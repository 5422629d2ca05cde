"""The benchmark programs of tests/bench/ keep working: each runs once at a tiny size, bare and
under the shim, and prints well-formed numbers. Nothing here is timed (make bench measures)."""

import json
import math
import os
import subprocess

import pytest

from conftest import LIB, ROOT, prog

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def one_json(result):
    assert result.returncode == 0, result.stderr
    lines = result.stdout_json()
    assert len(lines) == 1, result.stdout
    return lines[0]


def finite_positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.mark.parametrize("mix", ["small", "medium", "mixed"])
@pytest.mark.parametrize("preload", [False, True], ids=["bare", "shim"])
def test_alloc_loop_prints_ns_per_pair(run_shim, mix, preload):
    res = run_shim([prog("bench_alloc"), "--mix", mix, "--pairs", "2000", "--warmup", "100",
                    "--threads", "2", "--window", "64"], preload=preload, log=False)
    out = one_json(res)
    assert out["bench"] == "alloc"
    assert (out["mix"], out["threads"], out["pairs"], out["window"]) == (mix, 2, 2000, 64)
    assert finite_positive(out["ns_per_pair"])
    assert out["ns_per_pair_slowest"] >= out["ns_per_pair"]
    assert finite_positive(out["cpu_ns_per_pair"])


def test_alloc_loop_under_shim_and_jemalloc(run_shim):
    if not os.path.exists(JEMALLOC):
        pytest.skip("libjemalloc2 is not installed")
    res = run_shim([prog("bench_alloc"), "--pairs", "1000", "--warmup", "0"],
                   env={"LD_PRELOAD": f"{LIB} {JEMALLOC}"}, log=False)
    assert finite_positive(one_json(res)["ns_per_pair"])


def test_alloc_loop_rejects_unknown_mix(run_shim):
    res = run_shim([prog("bench_alloc"), "--mix", "huge"], preload=False, log=False)
    assert res.returncode == 2
    assert "usage" in res.stderr


CLEANUP_KEYS = {"bench", "mode", "heap_mib", "threads", "keep_every", "slices", "trim_pad_mib",
                "release_pages", "block_max_kib", "rss_before", "rss_after", "live_bytes",
                "arenas", "arena_free_max_bytes", "free_bytes", "cleanup_us", "cleanup_max_us",
                "cleanup_cpu_us", "record_us", "stall_quiet_us", "stall_cleanup_us",
                "blocked_quiet_us", "blocked_cleanup_us", "schedstat", "probes_quiet",
                "probes_cleanup", "frees", "released_frees", "released_bytes", "release_ns",
                "slice_cleanup_us", "slice_blocked_us", "slice_arena_free_max_bytes"}


def test_cleanup_cost_with_malloc_trim(run_shim):
    res = run_shim([prog("bench_cleanup"), "--mode", "trim", "--heap-mib", "8", "--threads", "2",
                    "--quiet-ms", "20"], preload=False, log=False)
    out = one_json(res)
    assert set(out) == CLEANUP_KEYS
    assert (out["mode"], out["heap_mib"], out["threads"]) == ("trim", 8, 2)
    assert out["record_us"] == -1
    assert out["rss_before"] > 8 * 1024 * 1024
    assert out["free_bytes"] >= out["arena_free_max_bytes"] > 0
    assert out["arenas"] >= 1
    assert out["cleanup_us"] > 0 and out["probes_quiet"] > 0
    assert 0 <= out["blocked_quiet_us"] <= out["stall_quiet_us"]
    assert 0 <= out["blocked_cleanup_us"] <= out["stall_cleanup_us"]


def test_cleanup_in_slices_with_release_at_free(run_shim):
    res = run_shim([prog("bench_cleanup"), "--mode", "trim", "--heap-mib", "8", "--threads", "2",
                    "--quiet-ms", "10", "--slices", "4", "--release-pages", "4",
                    "--block-max-kib", "256", "--trim-pad-mib", "1"], preload=False, log=False)
    out = one_json(res)
    assert set(out) == CLEANUP_KEYS
    assert (out["slices"], out["release_pages"], out["block_max_kib"]) == (4, 4, 256)
    assert len(out["slice_cleanup_us"]) == len(out["slice_blocked_us"]) == 4
    assert out["cleanup_max_us"] == max(out["slice_cleanup_us"])
    assert abs(out["cleanup_us"] - sum(out["slice_cleanup_us"])) < 1
    # The free heap grows slice by slice, and blocks of 4 whole pages or more were given back.
    assert out["slice_arena_free_max_bytes"] == sorted(out["slice_arena_free_max_bytes"])
    assert out["frees"] >= out["released_frees"] > 0
    assert out["released_bytes"] >= out["released_frees"] * 4 * 4096
    assert 0 < out["live_bytes"] < out["rss_before"]


def test_churn_loop_prints_ns_per_op(run_shim):
    res = run_shim([prog("bench_cleanup"), "--mode", "churn", "--threads", "2", "--churn-ops",
                    "2000", "--release-pages", "4"], preload=False, log=False)
    out = one_json(res)
    assert (out["mode"], out["threads"], out["churn_ops"]) == ("churn", 2, 2000)
    assert (out["block_min"], out["block_max"]) == (16 * 1024, 256 * 1024)
    assert finite_positive(out["ns_per_op"]) and finite_positive(out["cpu_ns_per_op"])
    assert out["released_frees"] > 0 and out["release_ns"] > 0


def test_cleanup_cost_through_a_roundtrim_round(run_shim):
    res = run_shim([prog("bench_cleanup"), "--mode", "round", "--heap-mib", "8", "--threads", "2",
                    "--quiet-ms", "20"])
    out = one_json(res)
    assert set(out) == CLEANUP_KEYS
    assert out["mode"] == "round"
    # The record's trim time is printed, and the measured round is the second one (the first
    # started the worker on an empty heap).
    assert out["record_us"] >= 0
    assert [r["round"] for r in res.rounds] == [1, 2]
    assert res.rounds[1]["cleanup"] == ["trim"]
    assert out["rss_after"] < out["rss_before"]


def test_cleanup_cost_round_mode_needs_the_shim(run_shim):
    res = run_shim([prog("bench_cleanup"), "--mode", "round", "--heap-mib", "4"], preload=False,
                   log=False)
    assert res.returncode == 2
    assert "libroundtrim.so" in res.stderr


FLOOR = os.path.join(os.path.dirname(LIB), "tests", "libfloor_interposer.so")


def test_floor_interposer_forwards_every_allocation(run_shim):
    res = run_shim([prog("bench_alloc"), "--mix", "mixed", "--pairs", "2000", "--warmup", "0"],
                   env={"LD_PRELOAD": FLOOR}, log=False)
    assert finite_positive(one_json(res)["ns_per_pair"])


@pytest.mark.parametrize("preload", [False, True], ids=["bare", "shim"])
def test_site_leak_keeps_one_mib_per_round(run_shim, preload):
    res = run_shim([prog("site_leak"), "--rounds", "3", "--churn-mib", "2", "--model-mib", "1"],
                   preload=preload, log=preload)
    assert res.returncode == 0, res.stderr
    assert [r["kept_mib"] for r in res.stdout_json()] == [1, 2, 3]
    if preload:
        assert [r["round"] for r in res.rounds][:3] == [1, 2, 3]


def test_sites_section_writes_its_tables(tmp_path):
    """bench/bench.py --quick --only sites: every table and row is there, whatever the figures
    (and 'n/a: library without sampling' when the built library has no sampling)."""
    out = tmp_path / "performance.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTRIM_")}
    proc = subprocess.run([os.path.join(ROOT, "bench", "bench.py"), "--quick", "--only", "sites",
                           "--out", str(out)], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    section = text.split("## 5. Allocation sites", 1)[1].split("## Commands", 1)[0]
    for heading in ("Instructions per small-block malloc/free pair", "Side by side",
                    "Detection of a planted leak"):
        assert heading in section
    for row in ("| glibc | bare |", "| glibc | floor |", "| glibc | roundtrim, sampling off |",
                "| glibc | roundtrim, sampling on |", "| C | `cache_round_result` |",
                "| Python | `keep_round_results` |"):
        assert row in section
    for workload in ("bench_alloc", "Python allocation loop", "PyTorch FL-like client"):
        assert f"**{workload}" in section
    # One row per workload (the calibration table's rows start with the allocator).
    assert section.count("\n| heaptrack |") == 3
    assert section.count("\n| roundtrim, sampling on |") == 3
    results = json.loads((tmp_path / "bench" / "results.json").read_text())
    if not results["results"]["sites"]["sampling"]:
        assert "n/a: library without sampling" in section
        assert "n/a: library without sampling" in proc.stderr
