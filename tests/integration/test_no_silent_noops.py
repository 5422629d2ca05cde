"""No setting that does nothing goes unsaid: a misspelled ROUNDTRIM_ variable gets one line naming
the one meant, a Python hook that never attached says why and what to do instead, a process with
a log that ends no round in its first minutes says so in its start record, and the documented
way of ending a round from Python works with and without the library."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import BUILD, PYTHON, ROOT, prog, read_records, rounds, shim_env, wait_for
from test_hardening_files import SECURE_OUTPUT, run_as_nobody, setuid_probe  # noqa: F401

# The library with its no-rounds note due after 2 s (mk/no_rounds.mk).
QUICK_NOTE_LIB = BUILD / "tests" / "libroundtrim_quick_note.so"

HINT = " is not a roundtrim variable and changes nothing; did you mean {}? (roundtrim env lists them)"


def quiet_program():
    return prog("signal_chain"), "3", "none"


@pytest.mark.parametrize("typed,value,meant", [
    ("ROUNDTRIM_GC_ROUND", "5", "ROUNDTRIM_GC_ROUNDS"),
    ("ROUNDTRIM_SITE", "true", "ROUNDTRIM_SITES"),
    ("ROUNDTRIM_LOGS", "x", "ROUNDTRIM_LOG (unset: no log is written)"),
    # by meaning, however far the spelling
    ("ROUNDTRIM_LOGFILE", "/tmp/rt.jsonl", "ROUNDTRIM_LOG (unset: no log is written)"),
    ("ROUNDTRIM_LOG_FILE", "/tmp/rt.jsonl", "ROUNDTRIM_LOG (unset: no log is written)"),
    ("ROUNDTRIM_METRICS_FILE", "/tmp/rt.prom",
     "ROUNDTRIM_PROM_FILE (unset: no metrics file is written)"),
])
def test_a_misspelled_variable_gets_one_line_naming_the_one_meant(run_shim, typed, value, meant):
    res = run_shim(quiet_program(), env={typed: value}, log=False)
    assert res.returncode == 0
    assert res.stdout == "seen=0 seen_info=0 installed=SIG_DFL\n"
    assert res.stderr.splitlines() == [f"roundtrim: {typed}" + HINT.format(meant)]


def test_each_misspelled_variable_gets_its_own_line_and_the_good_ones_work(run_shim, tmp_path):
    log = tmp_path / "rt.jsonl"
    res = run_shim([prog("fl_workload"), "--mode", "call", "--rounds", "2", "--model-mib", "1"],
                   env={"ROUNDTRIM_GC_ROUND": "5", "ROUNDTRIM_SITE": "true",
                        "ROUNDTRIM_LOG": str(log), "ROUNDTRIM_GC_ROUNDS": "1"}, log=False)
    assert res.returncode == 0, res.stderr
    warned = [l for l in res.stderr.splitlines() if "is not a roundtrim variable" in l]
    assert warned == ["roundtrim: ROUNDTRIM_GC_ROUND" + HINT.format("ROUNDTRIM_GC_ROUNDS"),
                      "roundtrim: ROUNDTRIM_SITE" + HINT.format("ROUNDTRIM_SITES")]
    assert len(rounds(read_records(log))) == 2


def test_a_misnamed_log_with_the_real_one_set_says_nothing_of_a_missing_log(run_shim):
    res = run_shim(quiet_program(), env={"ROUNDTRIM_LOG_FILE": "/tmp/x.jsonl"})
    assert res.returncode == 0
    assert res.stderr.splitlines() == ["roundtrim: ROUNDTRIM_LOG_FILE" + HINT.format("ROUNDTRIM_LOG")]


# ---- once per process tree ---------------------------------------------------------------------

# A shell script as a job's launcher runs them: subshells, command substitutions, pipelines, loops
# of short programs, a nested shell. None of them is run in the script's place (exec).
SCRIPT_TREE = """\
true
( /bin/true )
x=$(/bin/echo hi)
/bin/echo hi | /bin/cat >/dev/null
for i in 1 2 3 4 5; do /bin/true; done
sh -c '/bin/true; /bin/true; /bin/true'
{extra}
/bin/true
"""


def run_tree(tmp_path, extra="", env=None, preload=True):
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT_TREE.format(extra=extra))
    settings = {"ROUNDTRIM_LOGFILE": str(tmp_path / "rt.jsonl"), "ROUNDTRIM_GC_ROUNDS": "lots"}
    settings.update(env or {})
    return subprocess.run(["/bin/bash", str(script)], env=shim_env(settings, preload=preload),
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


WARNED = ["roundtrim: ROUNDTRIM_GC_ROUNDS=lots is not valid (expected a whole number from 0 to "
          "1000000); using 1 (client role default)",
          "roundtrim: ROUNDTRIM_LOGFILE" + HINT.format("ROUNDTRIM_LOG (unset: no log is written)")]


def warned(stderr):
    return sorted(l for l in stderr.splitlines() if l.startswith("roundtrim: "))


def test_a_process_tree_with_the_same_settings_is_told_once(tmp_path):
    res = run_tree(tmp_path)
    assert res.returncode == 0
    lines = warned(res.stderr)
    # the script's shell says each once; its fourteen children, started with the same settings
    # and writing to the same stderr, say nothing
    assert lines == WARNED, res.stderr


def test_a_child_with_other_settings_or_another_stderr_is_told_itself(tmp_path):
    extra = ("ROUNDTRIM_SITE=true /bin/true\n"
             "/bin/true 2>child.err\n")
    res = run_tree(tmp_path, extra=extra)
    assert res.returncode == 0
    lines = warned(res.stderr)
    # the child with one more setting says all of its own: the new one and the two it shares
    assert len(lines) == 5, res.stderr
    assert lines.count(WARNED[1]) == 2
    assert ("roundtrim: ROUNDTRIM_SITE" + HINT.format("ROUNDTRIM_SITES")) in lines
    # the child writing elsewhere says them there
    assert len(warned((tmp_path / "child.err").read_text())) == 2


def test_children_of_a_process_without_roundtrim_are_each_told(tmp_path):
    lib = shim_env()["LD_PRELOAD"]
    extra = f"LD_PRELOAD={lib} /bin/true\nLD_PRELOAD={lib} /bin/true\n"
    res = run_tree(tmp_path, extra=extra, preload=False)
    assert res.returncode == 0
    # the shell has no roundtrim: its two preloaded children cannot know that anyone said it
    assert len(warned(res.stderr)) == 4, res.stderr


def test_known_variables_and_the_commands_own_stay_quiet(run_shim):
    env = {"ROUNDTRIM_GC_ROUNDS": "3", "ROUNDTRIM_LIB": "/opt/x.so", "ROUNDTRIM_PYTHON": "python3",
           "ROUNDTRIM_PLOTTER": "none", "ROUNDTRIM_JEMALLOC_PATHS": "/x", "ROUNDTRIM_LOG_DIR": "/x",
           "NVFLARE_SOMETHING_ELSE": "1", "ROUNDTRIMX": "1"}
    res = run_shim(quiet_program(), env=env, log=False)
    assert (res.returncode, res.stderr) == (0, "")


def test_a_secure_exec_program_reads_no_name_and_says_nothing(setuid_probe):  # noqa: F811
    top, exe, _ = setuid_probe
    env = {"PATH": "/usr/bin:/bin", "ROUNDTRIM_GC_ROUND": "5", "ROUNDTRIM_SITE": "true",
           "ROUNDTRIM_LOGS": str(top / "x")}
    res = run_as_nobody(exe, env)
    assert (res.returncode, res.stdout, res.stderr) == (7, SECURE_OUTPUT, b"")
    # the control: its owner, not secure-exec, is told
    own = subprocess.run([str(exe)], env=shim_env({"ROUNDTRIM_SITE": "true"}, preload=False),
                         capture_output=True, timeout=60)
    assert own.stderr.decode().splitlines() == [
        "roundtrim: ROUNDTRIM_SITE" + HINT.format("ROUNDTRIM_SITES")]


# ---- the documented call from Python -----------------------------------------------------------

PYTHON_CALL = re.compile(r"`(getattr\(ctypes\.CDLL\(None\), \"roundtrim_round_end\"[^`]*)`")


def readme_python_call():
    """The README's one-line call from Python, as written; the guide's table gives the same."""
    m = PYTHON_CALL.search((ROOT / "README.md").read_text())
    assert m, "the README has no one-line Python call of roundtrim_round_end any more"
    guide = (ROOT / "docs" / "guide" / "rounds.md").read_text()
    assert m.group(1) in PYTHON_CALL.findall(guide), \
        "docs/guide/rounds.md gives another Python call than the README"
    return m.group(1)


def test_the_readmes_python_call_ends_a_round_under_the_library(run_shim):
    code = f"import ctypes\nfor _ in range(3):\n    {readme_python_call()}\n" \
           "import time; time.sleep(0.3)\n"
    res = run_shim([PYTHON, "-c", code])
    assert res.returncode == 0, res.stderr
    assert wait_for(lambda: len(rounds(read_records(res.log_path))) == 3)


def test_the_readmes_python_call_does_nothing_without_the_library(run_shim):
    code = f"import ctypes\n{readme_python_call()}\nprint('went on')\n"
    res = run_shim([PYTHON, "-c", code], preload=False, log=False)
    assert (res.returncode, res.stdout, res.stderr) == (0, "went on\n", "")


# ---- Python hooks that never attach -----------------------------------------------------------

MAIN_CALLS_AT_ONCE = """\
def run_round(i):
    return [bytearray(1000) for _ in range(10)]

for i in range(3):
    run_round(i)
print("done")
"""


def test_a_main_script_hook_that_never_attached_says_why_and_what_instead(run_shim, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(MAIN_CALLS_AT_ONCE)
    res = run_shim([PYTHON, script], env={"ROUNDTRIM_PY_HOOK": "__main__:run_round"})
    assert res.returncode == 0 and res.stdout == "done\n"
    lines = res.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("roundtrim: ROUNDTRIM_PY_HOOK: __main__:run_round never attached "
                               "in process ")
    assert "move the function into a module the script imports" in lines[0]
    assert "roundtrim_round_end()" in lines[0]


def test_a_hook_in_a_module_never_imported_says_so(run_shim):
    res = run_shim([PYTHON, "-c", "print('done')"],
                   env={"ROUNDTRIM_PY_HOOK": "mytraining.loop:run_round"})
    assert res.returncode == 0
    lines = res.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "mytraining.loop:run_round never attached" in lines[0]
    assert "the module was never imported by this process" in lines[0]


def test_the_same_hook_in_a_module_the_program_imports_attaches_and_stays_quiet(run_shim,
                                                                                tmp_path):
    (tmp_path / "rounds_mod.py").write_text(
        "def run_round(i):\n    return [bytearray(1000) for _ in range(10)]\n")
    (tmp_path / "train.py").write_text(
        "import time\nfrom rounds_mod import run_round\nfor i in range(3):\n    run_round(i)\n"
        "time.sleep(0.3)\n")
    res = run_shim([PYTHON, tmp_path / "train.py"],
                   env={"ROUNDTRIM_PY_HOOK": "rounds_mod:run_round", "PYTHONPATH": str(tmp_path)})
    assert (res.returncode, res.stderr) == (0, "")
    assert wait_for(lambda: len(rounds(read_records(res.log_path))) == 3)


# ---- the no-rounds note -----------------------------------------------------------------------


def quick_note_env(log, extra=None):
    env = shim_env(dict(extra or {}, LD_PRELOAD=str(QUICK_NOTE_LIB), ROUNDTRIM_LOG=str(log)))
    return env


def test_a_native_process_that_ends_no_round_notes_it_at_exit(tmp_path):
    log = tmp_path / "rt.jsonl"
    res = subprocess.run(["sleep", "3"], env=quick_note_env(log), capture_output=True, timeout=60)
    assert (res.returncode, res.stderr) == (0, b"")
    records = read_records(log)
    assert [r["event"] for r in records] == ["start", "exit"]
    note = records[0]["no_rounds"]
    assert note.startswith("no round ended in this process's first 2 s")
    assert "roundtrim round PID" in note and "ROUNDTRIM_INTERVAL_S" in note
    assert records[1]["rounds"] == 0


def test_a_python_process_notes_it_while_it_runs(tmp_path):
    log = tmp_path / "rt.jsonl"
    p = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(30)"], env=quick_note_env(log),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: log.exists() and read_records(log), timeout=20)
        assert p.poll() is None  # written while it runs, not at its exit
        (start,) = read_records(log)
        assert start["event"] == "start" and "no_rounds" in start
    finally:
        p.kill()
        p.wait()


def test_a_process_that_ended_a_round_gets_no_note(tmp_path):
    log = tmp_path / "rt.jsonl"
    code = ("import ctypes, time\nctypes.CDLL(None).roundtrim_round_end()\ntime.sleep(3)\n")
    res = subprocess.run([PYTHON, "-c", code], env=quick_note_env(log), capture_output=True,
                         timeout=60)
    assert (res.returncode, res.stderr) == (0, b"")
    records = read_records(log)
    assert len(rounds(records)) == 1
    assert not [r for r in records if "no_rounds" in r]


def test_a_short_process_without_rounds_still_writes_nothing(tmp_path):
    log = tmp_path / "rt.jsonl"
    res = subprocess.run(["true"], env=quick_note_env(log), capture_output=True, timeout=60)
    assert (res.returncode, res.stderr) == (0, b"")
    assert not log.exists()
