"""Sampling in a process that keeps many threads: the stack walks must not cost each thread
that takes a sample a fixed slice of memory (libunwind's fast trace keeps 256 KiB of cache per
thread that uses it), and the threads' sites must still be named with their native frames.

The program (tests/python/sites_threads.py) starts 50 threads a round and keeps them alive;
each allocates about 4 MiB and keeps 64 KiB at the line marked `# kept`."""

from conftest import PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "sites_threads.py"
KEPT_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
                 if line.endswith("# kept"))
ROUNDS, PER_ROUND = 4, 50
KIB = 1024


def run(run_shim, sites):
    res = run_shim([PYTHON, SCRIPT, str(ROUNDS), str(PER_ROUND)],
                   env={"ROUNDTRIM_SITES": sites}, timeout=180)
    assert res.returncode == 0, res.stderr
    rounds = res.stdout_json()
    assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
    assert rounds[-1]["threads"] == ROUNDS * PER_ROUND + 1, rounds[-1]
    return res, rounds[-1]["rss"]


def test_many_sampling_threads_cost_little_memory_each_and_are_named(run_shim):
    _, rss_off = run(run_shim, "false")
    res, rss_on = run(run_shim, "true")
    threads = ROUNDS * PER_ROUND
    # Every thread took samples (4 MiB at a mean of 512 KiB); what sampling added to the
    # process's RSS is far below one fast-trace cache a thread.
    assert rss_on - rss_off < threads * 128 * KIB, (rss_on - rss_off) / threads / KIB

    recs = [r for r in res.records if r.get("event") == "sites"]
    assert recs, res.stderr
    last = recs[-1]
    assert last["sampling_since"] == 0, last  # asked for: from the start
    kept = [s for s in last["live"]
            if s["python"] and s["python"][0]["line"] == KEPT_LINE
            and s["python"][0]["file"] == str(SCRIPT)]
    assert kept, [s["python"][:1] for s in last["live"]]
    assert all(s["frames"] for s in kept), kept
    live = sum(s["live_bytes"] for s in kept)
    want = threads * 64 * KIB
    assert 0.5 * want < live < 1.6 * want, (live, want)
