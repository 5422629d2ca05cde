"""Exact counts over threads that come and go between rounds, and in a fork child, on glibc and
with jemalloc preloaded after roundtrim (whose bytes come from jemalloc's own per-thread
counters)."""

import os

import pytest

from conftest import LIB, prog, read_records

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
COUNT_KEYS = ("malloc_calls", "free_calls", "malloc_bytes", "free_bytes")


def preload(allocator):
    if allocator == "glibc":
        return str(LIB)
    if not os.path.exists(JEMALLOC):
        pytest.skip("libjemalloc2 is not installed")
    return f"{LIB} {JEMALLOC}"


def counts(record):
    return {k: record[k] for k in COUNT_KEYS}


# Allocation sampling on, with the largest mean distance (every thread's first allocation takes
# the sampling path, which draws its countdown, and every free is looked up, but no sample is
# taken) and with a short one (a sample every few blocks: the stack walks allocate, and none of
# that may be counted as the program's).
SAMPLING = {"sampling": 1 << 40, "walking": 4096}
MODES = ["counting", "sampling", "walking"]


def sampling_env(mode):
    if mode == "counting":
        return {}
    return {"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": str(SAMPLING[mode])}


@pytest.mark.parametrize("sampling", MODES)
@pytest.mark.parametrize("allocator", ["glibc", "jemalloc"])
def test_threads_that_start_and_exit_between_rounds_are_counted_exactly_once(run_shim,
                                                                             allocator,
                                                                             sampling):
    """Threads exit with blocks still live, new threads take over their counters, two stay idle
    over a boundary and free what exited threads kept; after the first round's signal, roundtrim's
    worker starts on a thread that had allocated nothing yet: every round is exactly what the
    program did, with allocation sampling on as well."""
    env = dict(sampling_env(sampling), LD_PRELOAD=preload(allocator))
    res = run_shim([prog("thread_turnover"), "threads"], env=env)
    assert res.returncode == 0, res.stderr
    want = {r["round"]: r for r in res.stdout_json()}
    got = {r["round"]: r for r in res.rounds}
    assert sorted(got) == [1, 2, 3, 4]
    assert all(r["allocator"] == allocator for r in res.rounds)
    for n in (2, 3, 4):
        assert counts(got[n]) == {k: want[n][k] for k in COUNT_KEYS}, n
    # what the exited threads allocated is freed in later rounds: the program's books balance
    assert sum(want[n]["malloc_bytes"] - want[n]["free_bytes"] for n in (1, 2, 3, 4)) == 0
    assert any(r["event"] == "sites" for r in res.records) == (sampling != "counting")


@pytest.mark.parametrize("sampling", MODES)
@pytest.mark.parametrize("allocator", ["glibc", "jemalloc"])
def test_fork_child_counts_only_its_own_traffic(run_shim, tmp_path, allocator, sampling):
    """The parent allocates 32 MiB and forks: the child's first round (which starts its worker)
    holds none of it, and its second is exactly what it did."""
    log = tmp_path / "fork.jsonl"
    env = dict(sampling_env(sampling), LD_PRELOAD=preload(allocator), ROUNDTRIM_LOG=str(log))
    res = run_shim([prog("thread_turnover"), "fork"], env=env, log=False)
    assert res.returncode == 0, res.stderr
    [want] = res.stdout_json()
    child = [r for r in read_records(log) if r["pid"] == want["pid"]]
    rounds = {r["round"]: r for r in child if r["event"] == "round"}
    assert sorted(rounds) == [1, 2]
    assert rounds[1]["malloc_bytes"] < 1 << 20 and rounds[1]["free_bytes"] < 1 << 20
    assert counts(rounds[2]) == {k: want[k] for k in COUNT_KEYS}
    [exit_record] = [r for r in child if r["event"] == "exit"]
    assert exit_record["malloc_bytes"] < 1 << 20


def test_jemalloc_extended_api_bytes_are_counted_without_calls(run_shim):
    """With jemalloc, bytes come from its own per-thread counters: blocks the program allocates
    and frees through mallocx/sdallocx (which never reach roundtrim) add their bytes at the
    thread's next counted call, or when it exits, but no calls; so malloc_bytes - free_bytes
    stays the change in live bytes."""
    res = run_shim([prog("thread_turnover"), "extended"], env={"LD_PRELOAD": preload("jemalloc")})
    assert res.returncode == 0, res.stderr
    want = {r["round"]: r for r in res.stdout_json()}
    got = {r["round"]: r for r in res.rounds}
    for n in (2, 3):
        assert counts(got[n]) == {k: want[n][k] for k in COUNT_KEYS}, n
    assert got[2]["malloc_calls"] == 4 and got[2]["malloc_bytes"] > 5000 + 7000
