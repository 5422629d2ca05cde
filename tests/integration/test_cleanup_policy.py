"""The cleanup policy in real programs: each action runs when it gives memory back and says why
when it does not; the fixed period runs everything; the CPU budget and the pause limit hold; the
records carry each cleanup's CPU share."""

import math
import statistics

from conftest import PYTHON, ROOT, prog

PYDIR = ROOT / "tests" / "python"
MiB = 1 << 20


def rounds_of(res):
    return [r for r in res.records if r.get("event") == "round"]


def native(run_shim, mode, n=10, pause_ms=40, **env):
    res = run_shim([prog("diag_native"), mode, n, pause_ms], env=env)
    assert res.returncode == 0, res.stderr
    return rounds_of(res)


def test_a_leak_gets_no_trim_while_the_fixed_period_trims_every_round(run_shim):
    policy = native(run_shim, "leak")
    fixed = native(run_shim, "leak", ROUNDTRIM_ADAPTIVE="false")
    assert len(policy) == len(fixed) == 10
    assert all(r["cleanup"] == [] and r["trim_skipped"] == "little_to_gain" for r in policy)
    assert all(r["cleanup"] == ["trim"] and "trim_skipped" not in r for r in fixed)
    # Nothing to return either way: the same memory, for less work.
    assert abs(policy[-1]["rss_after"] - fixed[-1]["rss_after"]) < 4 * MiB
    assert sum(r["cleanup_cpu_us"] for r in policy) < sum(r["cleanup_cpu_us"] for r in fixed)


def test_a_fragmented_heap_is_trimmed_every_round(run_shim):
    # The budget off: a slow machine's trim may take a fifth of these 0.4 s rounds.
    recs = native(run_shim, "frag", n=8, pause_ms=400, ROUNDTRIM_CLEANUP_BUDGET="0")
    assert all(r["cleanup"] == ["trim"] for r in recs), [r.get("trim_skipped") for r in recs]
    assert all(r["trim_released_bytes"] > 30 * MiB for r in recs)
    assert all(r["rss_after"] < r["rss_before"] - 30 * MiB for r in recs)


def test_a_trim_that_returns_nothing_backs_off_and_tries_again_later(run_shim):
    recs = native(run_shim, "pinned", n=14, pause_ms=30)
    ran = [r["round"] for r in recs if "trim" in r["cleanup"]]
    # Twice in a row for nothing, then tried again 4 and 8 cleanup rounds later.
    assert ran == [1, 2, 6, 14], [(r["round"], r.get("trim_skipped")) for r in recs]
    assert all(r["trim_released_bytes"] < MiB for r in recs if "trim" in r["cleanup"])
    assert {r["trim_skipped"] for r in recs if r["round"] not in ran} == {"no_yield"}
    assert all(r["memory"]["heap_free"] > 12 * MiB for r in recs)


def test_a_trim_over_the_pause_limit_is_done_in_holds_and_returns_what_a_whole_trim_does(
        run_shim):
    # 46 MiB freed a round in one arena: a whole trim holds it 2 ms at 0.05 ms per MiB, 9 ms at
    # 0.19, 74 ms at 1.6. A 1 ms limit is under that on any machine: the first trim (no rate
    # known yet) and every later one, predicted over the limit, are done in holds.
    whole = native(run_shim, "frag", n=6, pause_ms=300, ROUNDTRIM_TRIM_PAUSE_MS="0",
                   ROUNDTRIM_CLEANUP_BUDGET="0")
    recs = native(run_shim, "frag", n=6, pause_ms=300, ROUNDTRIM_TRIM_PAUSE_MS="1",
                  ROUNDTRIM_CLEANUP_BUDGET="0")
    assert all(r["cleanup"] == ["trim"] and "trim_holds" not in r for r in whole)
    assert "trim_pause_predicted_us" not in recs[0]
    for r in recs:
        assert r["cleanup"] == ["trim"] and "trim_skipped" not in r, r
        assert r["round"] == 1 or r["trim_pause_predicted_us"] > 1000, r
        # Holds of half a millisecond or so: several for the arena's 2 ms or more.
        assert r["trim_holds"] >= 2, r
        assert 0 <= r["trim_holds_waited"] <= r["trim_holds"]
        assert r["trim_released_bytes"] > 30 * MiB, r
    # The holds give back what whole trims do.
    after = statistics.median(r["rss_after"] for r in recs[1:])
    assert after <= statistics.median(r["rss_after"] for r in whole[1:]) + 2 * MiB


def test_a_program_that_allocates_while_it_is_trimmed_gets_the_lock_between_holds(run_shim):
    # After each round the program keeps allocating and freeing 2-8 KiB blocks in the arena
    # being trimmed (past the per-thread cache: every call takes the arena's lock). The trim,
    # in holds under a 1 ms limit, sees it wait for the lock and lets it through between holds;
    # the program goes on, and the trim still gives the freed heap back.
    recs = native(run_shim, "busy", n=6, pause_ms=300, ROUNDTRIM_TRIM_PAUSE_MS="1",
                  ROUNDTRIM_CLEANUP_BUDGET="0")
    assert len(recs) == 6
    # Each round's freed heap comes back. On a loaded machine the worker may still be trimming
    # one round when the program frees the next round's blocks, and that trim gives them back
    # before the next round's RSS is read: the levels and the total say it, not each round's
    # own before and after.
    peak = max(r["rss_before"] for r in recs)
    for r in recs:
        assert r["cleanup"] == ["trim"] and r["trim_holds"] >= 2, r
        assert r["rss_after"] < peak - 30 * MiB, r
    assert sum(r["trim_released_bytes"] for r in recs) > 6 * 30 * MiB, recs
    assert sum(r["trim_holds_waited"] for r in recs) >= 3, [r["trim_holds_waited"] for r in recs]


def test_a_trim_in_holds_keeps_a_threaded_program_as_low_as_its_own_malloc_trim(run_shim):
    # Four threads, small blocks in several arenas, a limit far under any machine's hold.
    args = [prog("fl_workload"), "--rounds", "6", "--threads", "4", "--model-mib", "96",
            "--min-bytes", "64", "--max-bytes", "4064", "--keep-every", "16",
            "--pause-ms", "400"]
    manual = run_shim(args + ["--mode", "trim"], preload=False, log=False)
    shim = run_shim(args + ["--mode", "signal"], env={"ROUNDTRIM_TRIM_PAUSE_MS": "1",
                                                      "ROUNDTRIM_CLEANUP_BUDGET": "0"})
    assert manual.returncode == 0 and shim.returncode == 0, shim.stderr
    held = [r for r in shim.rounds if r.get("trim_holds")]
    assert len(held) >= 4, [(r["round"], r["cleanup"], r.get("trim_skipped")) for r in shim.rounds]
    # Every round trims, but one at most may find too little freed heap left at its end: its
    # steps (a sample of the worker's fell while the program was freeing) or, on a loaded
    # machine, glibc's own trim at one of the program's frees gave it back first.
    skipped = [r for r in shim.rounds if "trim_skipped" in r]
    assert len(skipped) <= 1 and all(r["trim_skipped"] == "little_to_gain" for r in skipped), [
        (r["round"], r.get("trim_skipped"), r.get("trim_steps")) for r in shim.rounds]
    manual_rss = statistics.median(r["rss"] for r in manual.stdout_json()[2:])
    assert statistics.median(r["rss"] for r in shim.stdout_json()[2:]) <= 1.05 * manual_rss


def test_the_budget_keeps_cleanup_cpu_near_its_share(run_shim):
    # 40 ms rounds earn 0.4 ms of a 1% budget; a trim of 46 MiB takes 2 ms or more on any
    # machine (0.05 ms per MiB and up): over the budget, so some wait, or run in holds for what
    # the budget has left and stop there (trim_budget_cut).
    recs = native(run_shim, "frag", n=16, pause_ms=40, ROUNDTRIM_CLEANUP_BUDGET="1")
    held = [r for r in recs if r.get("trim_skipped") == "budget" or r.get("trim_budget_cut")]
    ran = [r for r in recs if "trim" in r["cleanup"] and not r.get("trim_budget_cut")]
    assert held and ran, [(r.get("trim_skipped"), r.get("trim_budget_cut")) for r in recs]
    cpu = sum(r["cleanup_cpu_us"] for r in recs)
    wall = sum(r["round_us"] for r in recs)
    # The average keeps the share, up to the one cleanup that overdrew it.
    assert cpu <= wall * 0.01 + max(r["cleanup_cpu_us"] for r in recs), (cpu, wall)
    unlimited = native(run_shim, "frag", n=16, pause_ms=40, ROUNDTRIM_CLEANUP_BUDGET="0")
    assert all("trim" in r["cleanup"] for r in unlimited)


def test_each_record_gives_its_cleanup_cpu_and_round_time(run_shim):
    recs = native(run_shim, "frag", n=6, pause_ms=200)
    for r in recs[1:]:
        assert 200_000 <= r["round_us"] < 5_000_000
        assert 0 < r["cleanup_cpu_us"] <= r["cleanup_us"] + 1000
        share = 100.0 * r["cleanup_cpu_us"] / r["round_us"]
        assert abs(r["cleanup_cpu_percent"] - share) < 0.01
    quiet = native(run_shim, "leak", n=3)
    assert all(r["cleanup_cpu_us"] < 1000 for r in quiet)


def python_rounds(run_shim, mode, n=6, **env):
    argv = [PYTHON, PYDIR / "policy_workloads.py", mode, "--rounds", n, "--objects", 200000,
            "--wait", 0.1]
    res = run_shim(argv, env=env, timeout=240)
    assert res.returncode == 0, res.stderr
    return rounds_of(res)


def test_gc_is_left_out_where_the_interpreter_finds_no_garbage(run_shim):
    policy = python_rounds(run_shim, "leak", ROUNDTRIM_CLEANUP_BUDGET="0")
    fixed = python_rounds(run_shim, "leak", ROUNDTRIM_ADAPTIVE="false")
    # The first cleanup knows nothing yet and collects; after it, the interpreter's own
    # collections found nothing (no cycles are made).
    assert "gc" in policy[0]["cleanup"] and policy[0]["gc_collected"] == 0
    later = [r.get("gc_skipped") for r in policy[1:]]
    assert set(later) <= {"no_garbage", "program_gc"} and "no_garbage" in later
    assert all("gc" in r["cleanup"] for r in fixed)
    gc_cost = statistics.median(r["gc_us"] for r in fixed)
    assert gc_cost > 2000  # a full walk of 200,000 objects
    assert sum(r["cleanup_cpu_us"] for r in policy[1:]) < gc_cost * len(policy[1:]) / 5


def test_a_gc_that_frees_little_for_a_long_pause_is_held_back(run_shim):
    # 20 small cycles a round behind 200,000 live objects: each full collection finds them and
    # frees a few KiB. Under a 1 ms limit (a tenth of it: 0.1 ms, far under any full walk) it
    # does not pay; with a 60 s limit every walk is cheap and it runs every round.
    held = python_rounds(run_shim, "few_cycles", n=8, ROUNDTRIM_TRIM_PAUSE_MS="1",
                         ROUNDTRIM_CLEANUP_BUDGET="0")
    cheap = python_rounds(run_shim, "few_cycles", n=8, ROUNDTRIM_TRIM_PAUSE_MS="60000",
                          ROUNDTRIM_CLEANUP_BUDGET="0")
    ran = [r for r in held if "gc" in r["cleanup"]]
    assert ran and all(r["gc_collected"] >= 20 and r["gc_freed_bytes"] < MiB for r in ran), ran
    assert all(r["gc_us"] > 100 for r in ran)  # what it cost, in the record
    skipped = [r.get("gc_skipped") for r in held[1:] if "gc" not in r["cleanup"]]
    assert len(skipped) >= 4 and "no_yield" in skipped, skipped
    assert set(skipped) <= {"no_yield", "no_garbage", "program_gc"}, skipped
    assert all("gc" in r["cleanup"] and r["gc_collected"] >= 20 for r in cheap), cheap


def test_gc_runs_every_round_while_it_finds_cycles(run_shim):
    res = run_shim([PYTHON, PYDIR / "diag_rounds.py", "garbage", 6], timeout=180,
                   env={"ROUNDTRIM_CLEANUP_BUDGET": "0"})
    assert res.returncode == 0, res.stderr
    recs = rounds_of(res)
    assert all("gc" in r["cleanup"] and r["gc_collected"] >= 20000 for r in recs)


def test_the_fixed_period_collects_even_after_the_program_did(run_shim):
    policy = python_rounds(run_shim, "self_collecting")
    fixed = python_rounds(run_shim, "self_collecting", ROUNDTRIM_ADAPTIVE="false")
    assert [r.get("gc_skipped") for r in policy[1:]] == ["program_gc"] * (len(policy) - 1)
    assert all("gc" in r["cleanup"] and r["gc_collected"] == 0 for r in fixed)


def test_memory_pressure_cleans_whatever_the_policy_says(run_shim, tmp_path):
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.max").write_text(f"{48 * MiB}\n")
    # A 1% budget holds the round ends' trims back; no pause limit, so no trim steps between
    # rounds give the freed heap back before a pressure sample finds it.
    env = {"ROUNDTRIM_CGROUP_DIR": str(cgroup), "ROUNDTRIM_PRESSURE_CLEAN": "50",
           "ROUNDTRIM_PRESSURE_GAP_S": "0", "ROUNDTRIM_SAMPLE_MS": "20",
           "ROUNDTRIM_TRIM_PAUSE_MS": "0", "ROUNDTRIM_CLEANUP_BUDGET": "1"}
    # ten rounds: on a loaded machine the sampler may catch several rounds only while the heap
    # is still being built (a clean there finds little to give back)
    res = run_shim([prog("diag_native"), "frag", 10, 300], env=env)
    assert res.returncode == 0, res.stderr
    cleans = [r for r in res.records if r.get("event") == "pressure" and r["level"] == "clean"]
    assert cleans and any(r["cleanup"] == ["trim"] and r["rss_after"] < r["rss_before"] - 20 * MiB
                          for r in cleans)


def test_bad_policy_values_warn_once_and_keep_the_default(run_shim):
    res = run_shim([prog("diag_native"), "leak", 4, 20],
                   env={"ROUNDTRIM_CLEANUP_BUDGET": "250", "ROUNDTRIM_ADAPTIVE": "sometimes"})
    assert res.returncode == 0
    err = res.stderr
    assert "ROUNDTRIM_CLEANUP_BUDGET=250 is not valid" in err and "using 20" in err
    assert "ROUNDTRIM_ADAPTIVE=sometimes is not valid" in err and "using true" in err
    # The adaptive policy holds: each trim is judged and left out. (On a loaded machine the last
    # rounds may be recorded once the process exits: nothing is cleaned then, "exiting".)
    cleaned = [r for r in rounds_of(res) if r.get("cleanup_skipped") != "exiting"]
    assert cleaned and all(r["trim_skipped"] == "little_to_gain" for r in cleaned), cleaned


def test_the_cuda_release_waits_for_a_cache_worth_it(run_shim):
    from test_cuda import cuda_env, per_round

    def run(**env):
        res = run_shim([prog("cuda_getproc")], timeout=60,
                       env=cuda_env(ROUNDTRIM_CUDA_EMPTY_CACHE="true", ROUNDTRIM_ADAPTIVE="true",
                                    **env))
        assert res.returncode == 0, res.stderr
        return res, rounds_of(res)

    # Round 3 leaves 10 MiB in the pools: under the default 32 MiB, not worth a release.
    res, recs = run()
    assert per_round(res.stdout, "reserved")[3]["bytes"] == 10 * MiB
    assert recs[2]["memory"]["device_cached"] == 10 * MiB
    assert all("cuda_pool_trim" not in r["cleanup"] for r in recs)
    assert recs[2]["cuda_pool_trim_skipped"] == "little_to_gain"
    # With the threshold at 8 MiB that round's cache goes, and only that round's.
    res, recs = run(ROUNDTRIM_CUDA_CACHE_MIN_MIB="8")
    assert [("cuda_pool_trim" in r["cleanup"]) for r in recs[:4]] == [False, False, True, False]
    assert recs[2]["cuda_pool_trim_bytes"] == 10 * MiB


def test_a_heap_freed_as_the_round_goes_is_trimmed_in_steps_under_the_pause_limit(run_shim):
    # 140 MiB freed in 16 batches 100 ms apart a round, between survivors. Without a limit the
    # round's end trims all of it at once, and no step is taken.
    once = native(run_shim, "gradual", n=3, pause_ms=400, ROUNDTRIM_TRIM_PAUSE_MS="0")
    assert all("trim_steps" not in r and r["cleanup"] == ["trim"] for r in once)
    assert all(r["trim_released_bytes"] > 100 * MiB for r in once)
    # This machine's trim time per MiB of freed heap, from those trims: the limit is set so that
    # one batch (8.75 MiB) takes at most a quarter of it, and so the whole round's frees
    # (16 batches) four times it: one trim at the round's end would hold the arena too long, so
    # the worker trims as the frees come, whatever the machine's speed.
    us_per_mib = max(r["trim_us"] / (r["memory"]["heap_free"] / MiB) for r in once)
    limit_ms = max(5, math.ceil(us_per_mib * 8.75 * 4 / 1000))
    recs = native(run_shim, "gradual", n=5, pause_ms=400, ROUNDTRIM_TRIM_PAUSE_MS=str(limit_ms))
    stepped = [r for r in recs[1:] if r.get("trim_steps", 0) >= 2]
    assert len(stepped) >= 3, (limit_ms, [(r["round"], r.get("trim_steps")) for r in recs])
    for r in stepped:
        assert r["trim_steps_released_bytes"] > 80 * MiB, r
        assert r["memory"]["heap_free"] < 60 * MiB, r  # most of it already returned
        assert r["cleanup_cpu_us"] > 0
