"""A process ends when its program's last thread ends, as it does bare: roundtrim's own threads
never keep it alive nor leave its signals pending."""

import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PYTHON, prog, read_records, shim_env, wait_for

PY_DIR = Path(__file__).resolve().parents[1] / "python"

# How roundtrim's worker comes to exist before the main thread ends: not at all, on a round
# boundary, at start (eager), or for periodic sampling (a timer round).
WORKER_SETUPS = {
    "no worker": ([], {}),
    "round call": (["--round"], {}),
    "eager worker": ([], {"ROUNDTRIM_EAGER_WORKER": "true"}),
    "timer rounds": (["--round"], {"ROUNDTRIM_INTERVAL_S": "1", "ROUNDTRIM_GC_ROUNDS": "1"}),
}


@pytest.mark.parametrize("setup", WORKER_SETUPS, ids=list(WORKER_SETUPS))
def test_pthread_exit_from_main_exits_zero_with_the_exit_record(run_shim, setup):
    args, env = WORKER_SETUPS[setup]
    argv = [prog("main_thread_exit"), *args]
    bare = run_shim(argv, preload=False, log=False, timeout=20)
    shim = run_shim(argv, env=env, timeout=20)
    assert bare.returncode == 0
    assert shim.returncode == 0, shim.stderr
    assert shim.stdout == bare.stdout
    assert shim.stdout.splitlines()[-1] == "atexit handler ran"
    if args:  # a round was recorded, so the exit record is written too
        exits = [r for r in shim.records if r.get("event") == "exit"]
        assert len(exits) == 1, shim.records
        assert exits[0]["rounds_unrecorded"] == 0
        assert shim.rounds[0]["rss_before"] > 0  # read through a live thread, not the zombie main


@pytest.mark.parametrize("preload", [False, True])
def test_sigterm_ends_a_process_whose_main_thread_is_gone(spawn, preload):
    p, _ = spawn([prog("main_thread_exit"), "--round", "--block"], preload=preload)
    try:
        assert p.stdout.readline().strip() == "main thread ends with pthread_exit"
        assert p.stdout.readline().strip() == "last thread running"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == -signal.SIGTERM
    finally:
        p.kill()
        p.wait()


def test_python_child_forked_from_a_thread_ends_and_its_parent_too(run_shim):
    argv = [PYTHON, PY_DIR / "fork_from_thread.py", "3"]
    bare = run_shim(argv, preload=False, log=False, timeout=60)
    shim = run_shim(argv, env={"ROUNDTRIM_GC_ROUNDS": "1"}, timeout=60)
    assert bare.returncode == 0 and shim.returncode == 0, shim.stderr
    assert shim.stdout == bare.stdout
    assert "children exited with [0, 0, 0]" in shim.stdout


def test_rounds_go_on_in_a_process_whose_main_thread_ended(spawn):
    """The worker ends only with the program's last thread: the thread left after main's
    pthread_exit still gets its rounds recorded."""
    p, log = spawn([prog("main_thread_exit"), "--round", "--block"])
    try:
        assert p.stdout.readline().strip() == "main thread ends with pthread_exit"
        assert p.stdout.readline().strip() == "last thread running"
        for _ in range(2):
            p.send_signal(signal.SIGUSR1)
            time.sleep(0.1)
        got = wait_for(lambda: len([r for r in read_records(log) if r.get("event") == "round"]) >= 3)
        assert got, read_records(log)
    finally:
        p.kill()
        p.wait()


def test_threads_forking_at_once_while_rounds_end_neither_wait_nor_hang(run_shim):
    # Four threads fork 25 times each while a round ends every 5 ms. Each fork's handlers hold the
    # descriptor guard for their own thread: two at once must not leave it held, which made every
    # later fork wait out the guard's second, then the worker and exit wait for ever.
    res = run_shim([prog("fork_threads"), 4, 25, 5000], timeout=60)
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()[-1]
    assert out["forks"] == 100
    assert out["longest_fork_us"] < 1_000_000, out  # no fork waited out the guard's second
    exits = [r for r in res.records if r.get("event") == "exit"]
    assert len(exits) == 1 and exits[0]["pid"] == res.records[0]["pid"], exits
    # Without rounds, two threads forking 50 times each.
    res = run_shim([prog("fork_threads"), 2, 50, 0], timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout_json()[-1]["longest_fork_us"] < 1_000_000


# A Python program that exits right after its rounds, while roundtrim's helper is on its way to
# the GIL for the rounds' gc: the interpreter must wait for it before it finalizes, else the helper
# creates its thread state in a runtime already torn down and the process dies by SIGSEGV. The
# helper is held where CPython's PyGILState_Ensure begins (tests/programs/libslow_py_helper.c)
# until the interpreter is gone, or 300 ms. The program imports threading or not; the barrier
# is set as it starts, with the round hooks on or not.
EXIT_AFTER_ROUNDS = """
import ctypes, sys
{imports}
end = getattr(ctypes.CDLL(None), "roundtrim_round_end", lambda: 0)
held = [bytearray(100000) for _ in range(50)]
end(); del held; end()
print("threading" in sys.modules, "atexit" in sys.modules)
sys.exit(3)
"""
SLOW_HELPER = Path(__file__).resolve().parents[2] / "build" / "tests" / "libslow_py_helper.so"


@pytest.mark.parametrize("imports,hooks", [("", "auto"), ("import threading", "auto"),
                                           ("", "none")],
                         ids=["no threading", "threading", "round hooks none"])
def test_python_exiting_right_after_rounds_keeps_its_exit_code(run_shim, imports, hooks):
    from conftest import LIB
    script = EXIT_AFTER_ROUNDS.format(imports=imports)
    bare = run_shim([PYTHON, "-c", script], preload=False, log=False)
    env = {"LD_PRELOAD": f"{SLOW_HELPER} {LIB}", "SLOW_PY_HELPER_MS": "300",
           "ROUNDTRIM_PY_HOOK": hooks, "ROUNDTRIM_GC_ROUNDS": "1"}
    for _ in range(8):
        shim = run_shim([PYTHON, "-c", script], env=env, timeout=30)
        assert shim.returncode == 3 == bare.returncode, shim.stderr
        assert shim.stdout == bare.stdout  # sys.modules as bare: atexit was not imported
        assert [r["event"] for r in shim.records if r.get("event") == "exit"] == ["exit"]
