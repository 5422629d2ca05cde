"""The benchmark programs of tests/bench/ keep working: each runs once at a tiny size, bare and
under the shim, and prints well-formed numbers. Nothing here is timed (make bench measures)."""

import math
import os

import pytest

from conftest import LIB, prog

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


CLEANUP_KEYS = {"bench", "mode", "heap_mib", "threads", "keep_every", "rss_before", "rss_after",
                "arenas", "arena_free_max_bytes", "free_bytes", "cleanup_us", "record_us",
                "stall_quiet_us", "stall_cleanup_us", "blocked_quiet_us", "blocked_cleanup_us",
                "schedstat", "probes_quiet", "probes_cleanup"}


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
