"""The trim where each page-release system call is dear (60-100 us a call on hosts whose page
tables are virtualized in software), emulated by preloading build/tests/libslow_release.so beside
the library: every madvise and process_madvise call of roundtrim's spins 80 us before it reaches
the kernel. A fragmenting threaded program with idle time after each round must still end its
rounds as low as its own malloc_trim(0), its pages given back many ranges a call where the kernel
takes them (Linux 6.13 and later), one a call where it does not."""

import statistics

import pytest

from conftest import BUILD, LIB, prog

PIECE = 256 << 10  # the most one range of a hold carries
SLOW = BUILD / "tests" / "libslow_release.so"

# Four threads of 64-4,064-byte blocks, every 5th kept: tens of thousands of free chunks a round.
ARGS = ["--rounds", "7", "--threads", "4", "--model-mib", "64", "--min-bytes", "64",
        "--max-bytes", "4064", "--keep-every", "5", "--pause-ms", "600"]


def start_record(res):
    return next(r for r in res.records if r.get("event") == "start")


def with_idle(idle_ms):
    return [str(idle_ms) if a == "600" else a for a in ARGS]


def dear(run_shim, idle_ms=600, **env):
    env = {"LD_PRELOAD": f"{LIB} {SLOW}", "SLOW_RELEASE_CALL_US": "80", **env}
    res = run_shim([prog("fl_workload"), *with_idle(idle_ms), "--mode", "signal"], env=env,
                   timeout=180)
    assert res.returncode == 0, res.stderr
    return res


def own_trim_rss(run_shim):
    manual = run_shim([prog("fl_workload"), *ARGS, "--mode", "trim"], preload=False, log=False)
    assert manual.returncode == 0, manual.stderr
    return statistics.median(r["rss"] for r in manual.stdout_json()[2:])


def test_dear_calls_with_batches_the_default_policy_trims_in_full_every_round(run_shim):
    manual_rss = own_trim_rss(run_shim)
    res = dear(run_shim)
    if start_record(res).get("page_release") != "process_madvise":
        pytest.skip("this kernel gives no batched release to a process itself (before 6.13)")
    rounds = res.rounds
    assert len(rounds) == 7
    for r in rounds[1:]:
        assert r["cleanup"] == ["trim"] and "trim_skipped" not in r, r
        assert r["trim_holds"] >= 1 and r["trim_calls"] >= 1, r
        # Many ranges a call: one range never carries more than PIECE bytes.
        assert r["trim_call_bytes"] > r["trim_calls"] * PIECE, r
    rss = statistics.median(r["rss"] for r in res.stdout_json()[2:])
    assert rss <= 1.08 * manual_rss, (rss, manual_rss)


def test_dear_calls_on_a_kernel_without_batches_still_trims_one_call_a_range(run_shim):
    manual_rss = own_trim_rss(run_shim)
    # The kernel answers EINVAL for MADV_DONTNEED on oneself, as before 6.13; no CPU budget, so
    # that every round's trim runs however dear.
    # One call a range is slow on any host (the emulated 80 us on top of a host's own 1-100 us):
    # a longer idle lets the trim end before the program reads its RSS.
    res = dear(run_shim, SLOW_RELEASE_NO_BATCH="1", ROUNDTRIM_CLEANUP_BUDGET="0", idle_ms=1500)
    assert start_record(res)["page_release"] == "madvise"
    for r in res.rounds[1:]:
        assert r["cleanup"] == ["trim"] and "trim_skipped" not in r, r
        assert r["trim_calls"] >= 1 and r["trim_call_bytes"] <= r["trim_calls"] * PIECE, r
    rss = statistics.median(r["rss"] for r in res.stdout_json()[2:])
    assert rss <= 1.08 * manual_rss, (rss, manual_rss)


def test_the_start_record_names_the_release_path_of_a_glibc_process(run_shim):
    res = run_shim([prog("fl_workload"), "--rounds", "1", "--mode", "signal"])
    assert res.returncode == 0, res.stderr
    assert start_record(res)["page_release"] in ("process_madvise", "madvise")


def test_arenas_grown_past_one_heap_are_still_walked_every_round(run_shim):
    # Four threads of 100 MiB each: each thread's arena grows past glibc's 64 MiB heap into
    # further heaps, which the kernel may show as one line of /proc/self/maps with a neighbour.
    # Every round's trim walks every arena: the process ends its rounds as low as its own
    # malloc_trim(0) leaves it.
    args = ["--rounds", "5", "--threads", "4", "--model-mib", "400", "--min-bytes", "64",
            "--max-bytes", "4064", "--keep-every", "16", "--pause-ms", "300"]
    manual = run_shim([prog("fl_workload"), *args, "--mode", "trim"], preload=False, log=False)
    res = run_shim([prog("fl_workload"), *args, "--mode", "signal"], timeout=120)
    assert manual.returncode == 0 and res.returncode == 0, res.stderr
    assert len(res.rounds) == 5
    for r in res.rounds:
        assert r["cleanup"] == ["trim"] and "trim_skipped" not in r, r
        assert r["trim_holds"] >= 1 and r["trim_arenas_left"] == 0, r
    manual_rss = statistics.median(r["rss"] for r in manual.stdout_json()[2:])
    rss = statistics.median(r["rss"] for r in res.stdout_json()[2:])
    assert rss <= 1.10 * manual_rss, (rss, manual_rss)
