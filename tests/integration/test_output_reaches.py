"""What roundtrim writes reaches the user: records and warnings meant for stderr survive a program
that closes its stderr as it exits, a program that closes descriptors in a loop loses no record,
and a daemon that detaches is not kept attached to its starter's pipe."""

import json
import os
import select
import shutil
import signal
import subprocess
import time

import pytest

from conftest import prog, read_records, shim_env

SLEEP = shutil.which("sleep")  # coreutils: closes stdout and stderr in an atexit handler


def run_sleep_with_one_round(env):
    """coreutils sleep under the library, one SIGUSR1 while it sleeps; its stderr."""
    p = subprocess.Popen([SLEEP, "0.6"], env=shim_env(env), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        p.send_signal(signal.SIGUSR1)
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err
    return err


@pytest.mark.parametrize("eager", [False, True], ids=["worker on demand", "eager worker"])
def test_stderr_log_of_a_program_that_closes_stderr_at_exit(eager):
    env = {"ROUNDTRIM_LOG": "stderr"}
    if eager:
        env["ROUNDTRIM_EAGER_WORKER"] = "true"
    err = run_sleep_with_one_round(env)
    records = [json.loads(l) for l in err.splitlines()]
    assert [r["event"] for r in records] == ["start", "round", "diagnosis", "exit"], err
    assert records[3]["rounds"] == 1 and records[3]["rounds_unrecorded"] == 0


@pytest.mark.parametrize("kind", ["directory", "/dev/full", "fifo"])
def test_log_warning_reaches_stderr_closed_at_exit(tmp_path, kind):
    path = {"directory": tmp_path, "/dev/full": "/dev/full", "fifo": tmp_path / "fifo"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    err = run_sleep_with_one_round({"ROUNDTRIM_LOG": str(path)})
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"roundtrim: cannot open ROUNDTRIM_LOG={path}: ")
    assert lines[0].endswith("going on without a round log")


@pytest.mark.parametrize("at_exit", [False, True], ids=["at start", "from an atexit handler"])
@pytest.mark.parametrize("preload", [False, True])
def test_detached_daemon_does_not_hold_its_starters_pipe(at_exit, preload):
    """`out=$(daemon 2>&1)`: the pipe reaches end of file when the parent is gone, although the
    daemon lives on (30 s): nothing of roundtrim's holds its write end."""
    argv = [prog("detach")] + (["--at-exit"] if at_exit else []) + ["30"]
    env = shim_env({"ROUNDTRIM_LOG": "stderr"}, preload=preload)
    r, w = os.pipe()
    p = subprocess.Popen(argv, env=env, stdout=w, stderr=w)
    os.close(w)
    data, child = b"", None
    try:
        while True:
            ready, _, _ = select.select([r], [], [], 20)
            assert ready, "the pipe stayed open after the parent exited"
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        assert p.wait(timeout=20) == 0
        child = int(data.split()[0])
        os.kill(child, 0)  # the daemon is still alive: the end of file was not its exit
    finally:
        os.close(r)
        p.kill()
        p.wait()
        if child:
            os.kill(child, signal.SIGKILL)


def test_no_record_lost_to_a_program_closing_descriptors_in_a_loop(tmp_path):
    """Rounds every millisecond while the program closes descriptors 3-4095 and reopens 400
    files: every record reaches the log (the descriptor closed between roundtrim's check and its
    write is opened again), none lands in the program's files."""
    data = tmp_path / "data"
    data.mkdir()
    for run in range(3):
        log = tmp_path / f"churn{run}.jsonl"
        proc = subprocess.run([prog("fd_churn"), str(data), "80"], capture_output=True, text=True,
                              timeout=120, env=shim_env({"ROUNDTRIM_LOG": str(log)}))
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        ended = int(proc.stdout.split()[0].split("=")[1])
        assert proc.stdout.split()[1] == "foreign=0"
        records = read_records(log)
        rounds = [r for r in records if r["event"] == "round"]
        exit_record = records[-1]
        assert exit_record["event"] == "exit"
        assert exit_record["rounds_unrecorded"] == 0
        assert len(rounds) == exit_record["rounds"] == ended
