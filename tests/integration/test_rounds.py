"""Rounds exact to the instant, handled at once, and recorded to the end: what each record holds
when the worker is late or not yet running, Python processes idle in a join, _exit, bursts of
boundaries right before exit, and the program's own view of its peak."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, ROOT, prog, read_records, rounds, shim_env, wait_for

ROOT = Path(__file__).resolve().parents[2]
FAKECUDA = BUILD / "fakecuda"
COUNT_KEYS = ("malloc_calls", "free_calls", "malloc_bytes", "free_bytes")


def script(name):
    return str(ROOT / "tests" / "python" / name)


def exit_record(res):
    exits = [r for r in res.records if r.get("event") == "exit"]
    assert len(exits) == 1, res.records
    return exits[0]


def test_idle_native_program_gets_exact_counts_from_round_1(run_shim):
    """Allocates, raises SIGUSR1, sleeps 100 ms, never allocating while idle: the worker starts
    late (at the next malloc), yet every record holds exactly its own round."""
    before_main = run_shim([prog("idle_rounds"), "0"]).rounds[0]
    res = run_shim([prog("idle_rounds"), "5"])
    assert res.returncode == 0, res.stderr
    want = {r["round"]: r for r in res.stdout_json()}
    got = {r["round"]: r for r in res.rounds}
    assert sorted(got) == [1, 2, 3, 4, 5]
    for key in COUNT_KEYS:
        # round 1 also holds what ran before main, as a run that ends its round at once shows
        assert got[1][key] == want[1][key] + before_main[key], key
        for n in (2, 3, 4, 5):
            assert got[n][key] == want[n][key], (n, key)
    assert [r["source"] for r in res.rounds] == ["signal"] * 5
    assert exit_record(res)["rounds"] == 5 and exit_record(res)["rounds_unrecorded"] == 0


@pytest.mark.skipif(not (FAKECUDA / "libcuda.so.1").exists(), reason="stand-in driver not built")
def test_driver_reached_through_getprocaddress_counts_exactly_from_round_1(run_shim):
    """dlopen + cuGetProcAddress_v2 only, a SIGUSR1 after each round and 100 ms idle: round 1
    holds round 1's device traffic, not rounds 1 and 2, and round 2 is not empty."""
    env = {"LD_LIBRARY_PATH": str(FAKECUDA), "FAKECUDA_FAIL_ALLOC_OVER": str(64 << 20),
           "CUDA_ROUND_BY_SIGNAL": "1"}
    res = run_shim([prog("cuda_getproc")], env=env)
    assert res.returncode == 0, res.stderr
    expect = {}
    for line in res.stdout.splitlines():
        if line.startswith("expect "):
            values = dict(kv.split("=") for kv in line.split()[1:])
            expect[int(values.pop("round"))] = {k: int(v) for k, v in values.items()}
    assert sorted(expect) == [1, 2, 3, 4]
    assert len(res.rounds) == 4
    for n, want in expect.items():
        rec = res.rounds[n - 1]
        assert rec["source"] == "signal"
        for short, key in (("alloc_calls", "cuda_alloc_calls"), ("alloc_bytes", "cuda_alloc_bytes"),
                           ("free_calls", "cuda_free_calls"), ("free_bytes", "cuda_free_bytes"),
                           ("live", "cuda_live_bytes"), ("peak", "cuda_peak_bytes")):
            assert rec[key] == want[short], (n, key)


def test_python_process_blocked_in_join_records_a_signalled_round_with_its_gc(spawn):
    proc, log = spawn([PYTHON, script("join_blocked.py")], env={"ROUNDTRIM_ADAPTIVE": "false"})
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGUSR1)
    got = wait_for(lambda: rounds(read_records(log)), timeout=30)
    assert proc.poll() is None  # recorded while the process was still blocked in join()
    assert len(got) == 1, got
    assert got[0]["source"] == "signal"
    assert got[0]["cleanup"][:2] == ["gc", "trim"]
    assert got[0]["gc_us"] > 0


def test_python_fork_child_blocked_in_join_records_a_signalled_round_with_its_gc(spawn):
    """A fork child of a Python process is a Python process too: idle in a wait, it records a
    signalled round while it waits, not only when it ends."""
    proc, log = spawn([PYTHON, script("fork_child_blocked.py")],
                      env={"ROUNDTRIM_ADAPTIVE": "false"})
    child = int(proc.stdout.readline())
    try:
        os.kill(child, signal.SIGUSR1)
        got = wait_for(lambda: [r for r in rounds(read_records(log)) if r["pid"] == child],
                       timeout=30)
        assert proc.poll() is None  # the child is still blocked: the parent still waits on it
        assert len(got) == 1, got
        assert got[0]["source"] == "signal"
        assert got[0]["cleanup"][:2] == ["gc", "trim"]
    finally:
        os.kill(child, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not [r for r in read_records(log) if r["pid"] == proc.pid]  # no boundary, no output


def test_python_program_ending_with_os_exit_records_its_rounds_and_exit(run_shim):
    res = run_shim([PYTHON, script("os_exit_rounds.py")],
                   env={"ROUNDTRIM_PY_HOOK": "hook_target:round_fn"})
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.rounds] == [1, 2, 3]
    assert all(r["source"] == "python" for r in res.rounds)
    for r in res.rounds:  # every due gc ran or says why not
        assert "gc_us" in r or r.get("gc_skipped"), r
    end = exit_record(res)
    assert end["rounds"] == 3 and end["rounds_unrecorded"] == 0
    assert res.records[-1] is end


def test_forked_child_ending_with_os_exit_without_a_round_writes_nothing(run_shim):
    res = run_shim([PYTHON, script("os_exit_rounds.py"), "fork"],
                   env={"ROUNDTRIM_PY_HOOK": "hook_target:round_fn"})
    assert res.returncode == 0, res.stderr
    child = int(res.stdout.split()[0])
    assert not [r for r in res.records if r["pid"] == child]
    assert len(res.rounds) == 3 and exit_record(res)["rounds"] == 3


def test_exit_before_the_worker_ever_ran_records_the_round_without_taking_locks(run_shim):
    """A native program that ends with _exit right after its only round signal, without
    allocating in between: the exiting thread records the round itself, and reads nothing that
    takes the allocator's locks (it may be in a signal handler that interrupted malloc)."""
    res = run_shim([prog("idle_rounds"), "0", "_exit"])
    assert res.returncode == 0, res.stderr
    assert len(res.rounds) == 1
    r = res.rounds[0]
    assert r["source"] == "signal" and r["malloc_calls"] > 0
    # the live heap is roundtrim's own counters (no lock); the breakdown is not read at exit
    assert r["heap_live"] >= 0
    assert r["memory"] is None and r["memory_skipped"] == "exiting"
    assert r["cleanup"] == [] and r["cleanup_skipped"] == "exiting"
    assert exit_record(res)["rounds"] == 1 and exit_record(res)["rounds_unrecorded"] == 0


@pytest.mark.parametrize("how", ["exit", "_exit"])
def test_a_hundred_round_ends_then_exit_are_all_recorded(run_shim, how):
    # the fixed period: every round's cleanup runs (the policy would judge microsecond rounds
    # over budget and skip, which is not what this test is about)
    res = run_shim([prog("round_burst"), "100", how], env={"ROUNDTRIM_ADAPTIVE": "false"})
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.rounds] == list(range(1, 101))
    end = exit_record(res)
    assert end["rounds"] == 100 and end["rounds_unrecorded"] == 0
    assert res.records[-1] is end
    # rounds recorded once the process was ending skip their cleanup and say so
    for r in res.rounds:
        assert r["cleanup"] == ["trim"] or r["cleanup_skipped"] == "exiting", r


def test_boundaries_past_the_queue_are_merged_or_counted_never_lost(run_shim):
    res = run_shim([prog("round_burst"), "2000", "exit", "paced"])
    assert res.returncode == 0, res.stderr
    end = exit_record(res)
    assert end["rounds"] + end["rounds_unrecorded"] == 2000
    recorded = rounds(res.records)
    assert sum(1 + r.get("merged_rounds", 0) for r in recorded) == end["rounds"]
    assert recorded[-1]["round"] == end["rounds"]
    assert any(r.get("merged_rounds") for r in recorded)  # the bursts outrun a 256-slot queue


def test_exit_budget_bounds_the_exit_and_counts_what_it_left(run_shim):
    res = run_shim([prog("round_burst"), "300", "exit", "first"],
                   env={"ROUNDTRIM_EXIT_BUDGET_MS": "0"})
    assert res.returncode == 0, res.stderr
    end = exit_record(res)
    assert end["rounds"] + end["rounds_unrecorded"] == 300
    assert end["rounds"] <= len(res.rounds)


def test_program_peak_is_left_alone_by_default(run_shim):
    """Peaks at 64 MiB early, frees it, then ends four rounds: getrusage's ru_maxrss at exit
    still shows the early peak, and round 1's rss_peak covers it."""
    big_kb = 64 * 1024
    res = run_shim([prog("peak_early")])
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()[0]
    assert out["reached_kb"] >= big_kb
    assert out["maxrss_kb"] >= big_kb  # as without the shim
    assert res.rounds[0]["rss_peak"] >= big_kb * 1024
    assert all(r["rss_peak"] < big_kb * 1024 for r in res.rounds[1:])
    assert all(r["rss_peak"] >= r["rss_before"] for r in res.rounds)
    # the opt-in reset does what its description says: the program's own peak is lowered
    reset = run_shim([prog("peak_early")], env={"ROUNDTRIM_PEAK_RESET": "true"})
    assert reset.stdout_json()[0]["maxrss_kb"] < big_kb


def test_python_process_without_a_round_has_a_worker_but_writes_nothing(run_shim, tmp_path):
    """The worker starts with the interpreter, then sleeps: a Python process that never ends a
    round writes no record, not even about memory pressure it is under (here 99% of a cgroup
    limit, past the default warning line, for longer than a sample period)."""
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.max").write_text(str(100 << 20) + "\n")
    (cgroup / "memory.current").write_text(str(99 << 20) + "\n")
    code = ("import os, time; time.sleep(1.5); "
            "print(sorted(open(f'/proc/self/task/{t}/comm').read().strip() "
            "for t in os.listdir('/proc/self/task')))")
    res = run_shim([PYTHON, "-c", code], env={"ROUNDTRIM_CGROUP_DIR": str(cgroup)})
    assert res.returncode == 0, res.stderr
    assert "'roundtrim'" in res.stdout  # the worker thread runs
    assert res.records == [] and not res.log_path.exists()


# The program has a handler of its own for the round signal: one that sends the signal to
# itself with none gets the default action (it ends), as it would bare.
EXEC_AFTER_SIGNALS = """
import os, signal, sys, time
signal.signal(signal.SIGUSR1, lambda signum, frame: None)
def round_signal():
    os.kill(os.getpid(), signal.SIGUSR1)
for _ in range(3):
    round_signal()
time.sleep(0.2)
round_signal()
if sys.argv[1] == "fail":
    try:
        os.execv("/nonexistent/program", ["x"])
    except OSError:
        pass
    round_signal()
    time.sleep(0.2)
    sys.exit(0)
os.execv("/bin/true", ["true"])
"""


def test_exec_records_pending_rounds_and_an_exec_record(run_shim):
    """Three round signals, a pause, a fourth right before os.execv: all four rounds and the
    totals are written before the new program replaces the process."""
    res = run_shim([PYTHON, "-c", EXEC_AFTER_SIGNALS, "ok"])
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.rounds] == [1, 2, 3, 4]
    execs = [r for r in res.records if r.get("event") == "exec"]
    assert len(execs) == 1 and res.records[-1] is execs[0]
    assert execs[0]["rounds"] == 4 and execs[0]["rounds_unrecorded"] == 0
    assert not [r for r in res.records if r.get("event") == "exit"]
    # roundtrim report reads the exec record as the old image's last one
    report = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", str(res.log_path)],
                            capture_output=True, text=True, timeout=60,
                            env=shim_env(preload=False))
    assert report.returncode == 0, report.stderr
    assert "unknown event" not in report.stderr
    assert "replaced itself with exec after 4 rounds" in report.stdout


def test_failed_exec_carries_on_and_the_exit_record_follows(run_shim):
    res = run_shim([PYTHON, "-c", EXEC_AFTER_SIGNALS, "fail"], env={"ROUNDTRIM_ADAPTIVE": "false"})
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.rounds] == [1, 2, 3, 4, 5]
    assert res.rounds[4]["cleanup"][:2] == ["gc", "trim"]  # cleanups resume after the exec
    events = [r["event"] for r in res.records if r["event"] not in ("start", "diagnosis")]
    assert events == ["round"] * 4 + ["exec", "round", "exit"]
    assert exit_record(res)["rounds"] == 5 and exit_record(res)["rounds_unrecorded"] == 0


def test_shell_that_execs_its_last_command_records_its_round(run_shim):
    # From a subshell, another process: `kill -USR1 $$` from the shell itself, with no trap,
    # ends it, as it does bare.
    res = run_shim(["bash", "-c", "(kill -USR1 $$); echo after; /bin/true"])
    assert res.returncode == 0, res.stderr
    assert len(res.rounds) == 1 and res.rounds[0]["source"] == "signal"
    execs = [r for r in res.records if r.get("event") == "exec"]
    assert len(execs) == 1 and execs[0]["rounds"] == 1


def test_collections_before_the_first_round_are_not_the_programs_gc(run_shim):
    """Full collections at startup (imports run them; here one gc.collect() before any round)
    are not the program's cleanup: round 1's gc runs. One in round 2 is, and round 2 skips."""
    code = ("import gc, os, subprocess, time\n"
            "gc.collect()\n"
            "subprocess.run(['kill', '-USR1', str(os.getpid())]); time.sleep(0.3)\n"
            "gc.collect()\n"
            "subprocess.run(['kill', '-USR1', str(os.getpid())]); time.sleep(0.3)\n")
    res = run_shim([PYTHON, "-c", code])
    assert res.returncode == 0, res.stderr
    assert len(res.rounds) == 2, res.records
    assert res.rounds[0]["cleanup"][0] == "gc", res.rounds[0]
    assert "gc_skipped" not in res.rounds[0]
    assert res.rounds[1].get("gc_skipped") == "program_gc", res.rounds[1]


def test_a_burst_past_the_queue_ends_in_a_record_of_its_own(run_shim):
    """1000 roundtrim_round_end() calls in a row, then a pause: the boundaries that found the
    queue full are recorded too, as one record that says how many it merged, not dropped."""
    code = ("import ctypes, sys, time\n"
            "end = ctypes.CDLL(None).roundtrim_round_end\n"
            "for _ in range(1000):\n"
            "    end()\n"
            "time.sleep(1)\n"
            "sys.exit(0)\n")
    res = run_shim([PYTHON, "-c", code])
    assert res.returncode == 0, res.stderr
    end = exit_record(res)
    assert end["rounds"] == 1000 and end["rounds_unrecorded"] == 0, end
    assert sum(1 + r.get("merged_rounds", 0) for r in res.rounds) == 1000
    assert res.rounds[-1]["round"] == 1000 and res.rounds[-1]["merged_rounds"] > 0


SELF_SIGNAL = """
import os, signal, sys, threading
print("before", flush=True)
how = sys.argv[1]
if how == "os.kill":
    os.kill(os.getpid(), signal.SIGUSR1)
elif how == "raise_signal":
    signal.raise_signal(signal.SIGUSR1)
else:
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
print("survived", flush=True)
"""


@pytest.mark.parametrize("how", ["os.kill", "raise_signal", "pthread_kill"])
def test_program_that_sends_itself_the_round_signal_without_a_handler_ends_as_bare(run_shim, how):
    """The program asked for the signal's default action, and gets it: no round is marked, the
    process ends by the signal (CPython's test_posix expects exactly this of a spawned child)."""
    argv = [PYTHON, "-c", SELF_SIGNAL, how]
    bare = run_shim(argv, preload=False, log=False)
    shim = run_shim(argv, env={"ROUNDTRIM_EAGER_WORKER": "1"})
    assert bare.returncode == shim.returncode == -signal.SIGUSR1
    assert bare.stdout == shim.stdout == "before\n"
    assert shim.rounds == []


EXEC_AFTER_A_LAUNCHER_SIGNAL = """
import os, subprocess, time
for _ in range(3):
    subprocess.run(["kill", "-USR1", str(os.getpid())], check=True)
    time.sleep(0.2)
subprocess.run(["kill", "-USR1", str(os.getpid())], check=True)
os.execv("/bin/true", ["true"])
"""


def test_exec_right_after_a_round_signal_gives_up_the_gc_waiting_for_the_gil(run_shim):
    """The fourth round's gc waits for the GIL, which the thread calling execv holds: at exec it
    gives up at once, and the round is recorded before the new program replaces the process."""
    for _ in range(4):
        res = run_shim([PYTHON, "-c", EXEC_AFTER_A_LAUNCHER_SIGNAL])
        assert res.returncode == 0, res.stderr
        execs = [r for r in res.records if r.get("event") == "exec"]
        assert len(execs) == 1, res.records
        brief = [{k: r.get(k) for k in ("event", "round", "ts", "rounds", "rounds_unrecorded",
                                         "cleanup", "cleanup_us")} for r in res.records]
        assert execs[0]["rounds"] == 4 and execs[0]["rounds_unrecorded"] == 0, json.dumps(brief)
        assert [r["round"] for r in res.rounds] == [1, 2, 3, 4]
