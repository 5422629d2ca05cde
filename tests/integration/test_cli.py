"""The roundtrim command, its report, and the deployment examples, as a user meets them.

Every test runs the real script (scripts/roundtrim) against the real library in build/; every
process a test starts is ended by the test, also when an assertion fails.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUILD, LIB, safe_host_name, shim_env, wait_for

REPO = Path(__file__).resolve().parents[2]
ROUNDTRIM = REPO / "scripts" / "roundtrim"
OPTIONS_TOOL = BUILD / "roundtrim-options"
EXAMPLES = REPO / "scripts" / "examples"
SAMPLE_LOG = Path(__file__).resolve().parent / "data" / "two-processes.jsonl"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.skipif(not LIB.exists() or not OPTIONS_TOOL.exists(),
                                reason="run 'make' first: needs the library and roundtrim-options")


# ---- helpers ----------------------------------------------------------------------------------


def clean_env(**extra):
    """The runner's environment without roundtrim's, NVFlare's or the allocator's variables and
    without LD_PRELOAD, plus extra."""
    env = shim_env(preload=False)
    env.pop("MALLOC_CONF", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def roundtrim(*args, env=None, timeout=60, **kw):
    return subprocess.run([str(ROUNDTRIM), *map(str, args)], env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout, **kw)


def libc_path():
    """The C library this interpreter uses: a real library that is harmless to preload."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if re.search(r"/libc[.-][^/]*so", path):
            return path
    pytest.skip("cannot find the C library in /proc/self/maps")


def option_names():
    out = subprocess.run([str(OPTIONS_TOOL), "--format", "tsv"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = [line.split("\t") for line in out[1:]]
    return {row[0]: row for row in rows}


def wait_until(predicate, what, timeout=15.0):
    value = wait_for(predicate, timeout=timeout)
    assert value, f"timed out after {timeout} s waiting for {what}"
    return value


def records(log):
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def catches(pid, signum):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


TICKER_C = r"""
#include <stdlib.h>
#include <unistd.h>
/* A long-running process that allocates a little every 20 ms, like a training loop. */
int main(void)
{
    for (int i = 0; i < 3000; i++) {
        free(malloc(4096));
        usleep(20000);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    src = tmp_path_factory.mktemp("ticker") / "ticker.c"
    src.write_text(TICKER_C)
    exe = src.with_suffix("")
    subprocess.run(["cc", "-O1", "-fno-builtin", str(src), "-o", str(exe)], check=True)
    return exe


@pytest.fixture
def shimmed_ticker(spawn, ticker, tmp_path):
    """shimmed_ticker(**env) -> (Popen, log): a busy process started with `roundtrim run`, once
    the library has installed its round signal handler. spawn ends it after the test."""

    def start(log_name="rounds.jsonl", **extra):
        log = tmp_path / log_name
        # the library's own reading of the variable (a bad value falls back to SIGUSR1)
        num = int(subprocess.run([str(BUILD / "roundtrim-options"), "--round-signal",
                                  str(extra.get("ROUNDTRIM_ROUND_SIGNAL", ""))],
                                 capture_output=True, text=True, check=True).stdout)
        sig = num or None  # a number: real-time signals have no signal.Signals member
        proc, _ = spawn([ROUNDTRIM, "run", "--log", log, "--", ticker],
                        env={k: str(v) for k, v in extra.items()}, preload=False, log=False)

        def ready():
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
            return LIB.name in maps and (sig is None or catches(proc.pid, sig))

        wait_until(ready, "the library to load and install its round signal handler")
        return proc, log

    return start


# ---- help and bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["run", "--help"], ["round", "--help"],
                                  ["env", "--help"], ["report", "--help"]])
def test_every_command_explains_itself(args):
    r = roundtrim(*args)
    assert r.returncode == 0, r.stderr
    sub = args[0] if args[0] not in ("-h", "--help") else ""
    assert r.stdout.startswith("Usage: roundtrim" + (" " + sub if sub else ""))
    assert "Exit status" in r.stdout or sub == ""
    assert r.stderr == ""


def test_version():
    r = roundtrim("--version")
    assert r.returncode == 0
    assert re.fullmatch(r"roundtrim \d+\.\d+\.\d+\n", r.stdout)


@pytest.mark.parametrize("args, words", [
    ([], "missing a command"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["--frob"], "unknown option '--frob'"),
    (["run"], "missing the command to run"),
    (["run", "--"], "missing the command to run"),
    (["run", "--frob", "true"], "unknown option '--frob'"),
    (["run", "--role", "boss", "true"], "unknown role 'boss'"),
    (["run", "--role"], "--role needs a value"),
    (["round"], "missing the process id"),
    (["round", "12x"], "'12x' is not a process id"),
    (["round", "-5"], "unknown option '-5'"),
    (["round", "0"], "'0' is not a process id"),
    (["round", "1", "2"], "expected one process id"),
    (["round", "--wait=soon", "1"], "--wait 'soon' is not a number of seconds"),
    (["round", "--wait"], "missing the process id"),
    (["round", "--wait", "10"], "missing the process id ('10' after --wait is the number of "
                                "seconds to wait); nothing signalled"),
    (["round", "--wait=10"], "missing the process id"),
    (["round", ""], "the process id is empty"),
    (["round", "", "--wait", "10"], "the process id is empty"),
    (["round", "--wait", "10", ""], "the process id is empty"),
    (["round", "", "12"], "expected one process id, got '' and '12'"),
    (["round", "12\n34", "--wait", "10"], "expected one process id, got several: 12 34"),
    (["round", "abc"], "'abc' is not a process id"),
    (["run", "--sites", "", "true"], "--sites got an empty value"),
    (["run", "--sites=", "true"], "--sites got an empty value"),
    (["run", "--log", "", "true"], "--log got an empty value"),
    (["run", "--log=", "true"], "--log got an empty value"),
    (["run", "--role", "", "true"], "--role got an empty value"),
    (["env", "--lib", ""], "--lib got an empty value"),
    (["env", "--role=", ""], "--role got an empty value"),
    (["env", "--format", "xml"], "unknown format 'xml'"),
    (["env", "--role", "boss"], "unknown role 'boss'"),
    (["env", "extra"], "unexpected argument 'extra'"),
    (["report"], "missing the round log"),
    (["report", SAMPLE_LOG, "--frob"], "unknown option '--frob'"),
    (["report", SAMPLE_LOG, "--pid", "abc"], "'abc' is not a process id"),
    (["report", SAMPLE_LOG, "--pid", "\u00b2"], "'\u00b2' is not a process id"),
    (["report", SAMPLE_LOG, "--pid", "4101", "--round", "\u0663"], "is not a round number"),
])
def test_wrong_arguments_get_one_clear_line_and_status_2(args, words):
    r = roundtrim(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 2, r.stderr
    assert words in lines[0]
    assert lines[1].startswith("Try 'roundtrim") and "--help" in lines[1]
    assert r.stdout == ""


# ---- run --------------------------------------------------------------------------------------


def test_run_preloads_the_library_into_the_command():
    r = roundtrim("run", "--", "cat", "/proc/self/maps")
    assert r.returncode == 0, r.stderr
    assert str(LIB.resolve()) in r.stdout


def test_run_sets_role_and_log_and_passes_arguments(tmp_path):
    log = tmp_path / "r.jsonl"
    r = roundtrim("run", "--role", "server", "--log", log, "sh", "-c",
                  'printf "%s|%s|%s|%s\\n" "$ROUNDTRIM_ROLE" "$ROUNDTRIM_LOG" "$LD_PRELOAD" "$1"',
                  "sh", "arg with spaces")
    assert r.returncode == 0, r.stderr
    role, logvar, preload, arg = r.stdout.strip().split("|")
    assert (role, logvar, arg) == ("server", str(log), "arg with spaces")
    assert preload == str(LIB.resolve())


def test_run_keeps_what_ld_preload_already_holds():
    other = libc_path()
    env = clean_env(LD_PRELOAD=f"{other} {LIB.resolve()}")
    r = roundtrim("run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"', env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(":") == [str(LIB.resolve()), other]


def test_run_gives_the_exit_status_of_the_command():
    assert roundtrim("run", "sh", "-c", "exit 7").returncode == 7
    r = roundtrim("run", "no-such-command-roundtrim-test")
    assert r.returncode == 127
    assert "no-such-command-roundtrim-test: command not found" in r.stderr


def test_run_refuses_an_unwritable_log_before_starting(tmp_path):
    marker = tmp_path / "ran"
    r = roundtrim("run", "--log", tmp_path / "missing" / "r.jsonl", "touch", marker)
    assert r.returncode == 1
    assert "does not exist" in r.stderr and str(tmp_path / "missing") in r.stderr
    assert "the program was not started" in r.stderr  # says which way it goes
    assert not marker.exists()
    env = clean_env(ROUNDTRIM_PROM_FILE=tmp_path / "nodir" / "m.prom")
    r = roundtrim("run", "touch", marker, env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("roundtrim: ROUNDTRIM_PROM_FILE=")
    assert not marker.exists()


def test_run_says_where_it_looked_when_the_library_is_missing(tmp_path):
    r = roundtrim("run", "true", env=clean_env(ROUNDTRIM_LIB=tmp_path / "nope.so"))
    assert r.returncode == 1
    assert "nope.so: no such file" in r.stderr


def test_run_jemalloc_goes_after_the_library_with_decay_defaults(tmp_path):
    stand_in = libc_path()  # any real library: the test checks the order and the settings
    env = clean_env(ROUNDTRIM_JEMALLOC_PATHS=f"{tmp_path}/none.so:{stand_in}",
                    LD_PRELOAD="/usr/lib/user-entry.so")
    show = 'printf "%s\\n%s\\n" "$LD_PRELOAD" "$MALLOC_CONF"'
    r = roundtrim("run", "--jemalloc", "--", "sh", "-c", show, env=env)
    assert r.returncode == 0, r.stderr
    preload, conf = r.stdout.splitlines()
    assert preload.split(":") == [str(LIB.resolve()), stand_in, "/usr/lib/user-entry.so"]
    assert conf == "dirty_decay_ms:5000,muzzy_decay_ms:5000"
    # The NVFlare switch does the same; a MALLOC_CONF of the user's own is kept.
    env.update(NVFLARE_ENABLE_JEMALLOC_PRELOAD="true", MALLOC_CONF="narenas:2")
    r = roundtrim("run", "sh", "-c", show, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "narenas:2"
    assert stand_in in r.stdout.splitlines()[0]


@pytest.mark.parametrize("value", ["maybe", "2", "on\tdemand"])
def test_run_bad_nvflare_jemalloc_switch_warns_once_and_leaves_jemalloc_out(tmp_path, value):
    stand_in = libc_path()
    env = clean_env(ROUNDTRIM_JEMALLOC_PATHS=stand_in, NVFLARE_ENABLE_JEMALLOC_PRELOAD=value)
    r = roundtrim("run", "sh", "-c", 'printf "%s\\n" "$LD_PRELOAD"', env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(LIB.resolve())]
    shown = value.replace("\t", "?")
    assert r.stderr.splitlines() == [
        f"roundtrim: NVFLARE_ENABLE_JEMALLOC_PRELOAD={shown} is not valid (expected true or "
        "false); using false"]


@pytest.mark.skipif(not Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2").exists()
                    and not Path("/usr/lib/aarch64-linux-gnu/libjemalloc.so.2").exists(),
                    reason="the system jemalloc (libjemalloc2) is not installed")
def test_run_jemalloc_really_loads_the_system_jemalloc():
    r = roundtrim("run", "--jemalloc", "cat", "/proc/self/maps")
    assert r.returncode == 0, r.stderr
    assert str(LIB.resolve()) in r.stdout and "libjemalloc.so.2" in r.stdout


def test_run_jemalloc_missing_names_the_package_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    env = clean_env(ROUNDTRIM_JEMALLOC_PATHS=f"{tmp_path}/libjemalloc.so.2")
    r = roundtrim("run", "--jemalloc", "touch", marker, env=env)
    assert r.returncode == 1
    assert "jemalloc" in r.stderr and "libjemalloc2" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert not marker.exists()


# ---- round ------------------------------------------------------------------------------------


def round_records(log, pid):
    return [r for r in records(log) if r.get("event") == "round" and r.get("pid") == pid]


def test_round_ends_a_round_in_a_shimmed_process(shimmed_ticker):
    proc, log = shimmed_ticker()
    r = roundtrim("round", proc.pid)
    assert r.returncode == 0, r.stderr
    assert f"SIGUSR1 to process {proc.pid}" in r.stdout
    first = wait_until(lambda: round_records(log, proc.pid), "a round record")
    assert first[0]["source"] == "signal"
    assert proc.poll() is None


def test_round_uses_the_process_own_round_signal(shimmed_ticker):
    proc, log = shimmed_ticker(ROUNDTRIM_ROUND_SIGNAL="usr2")
    r = roundtrim("round", proc.pid)
    assert r.returncode == 0, r.stderr
    assert "SIGUSR2" in r.stdout
    wait_until(lambda: round_records(log, proc.pid), "a round record after SIGUSR2")
    assert proc.poll() is None


@pytest.mark.parametrize("value", ["TERM", "bogus"])
def test_round_sends_the_signal_the_library_took_not_a_bad_value(shimmed_ticker, value):
    """A bad ROUNDTRIM_ROUND_SIGNAL leaves the library on SIGUSR1: that is what must be sent."""
    proc, log = shimmed_ticker(ROUNDTRIM_ROUND_SIGNAL=value)
    r = roundtrim("round", proc.pid)
    assert r.returncode == 0, r.stderr
    assert f"SIGUSR1 to process {proc.pid}" in r.stdout
    wait_until(lambda: round_records(log, proc.pid), "a round record after SIGUSR1")
    assert proc.poll() is None


@pytest.mark.parametrize("value", ["none", "off", "OFF"])
def test_round_refuses_a_process_without_a_round_signal(shimmed_ticker, value):
    proc, _ = shimmed_ticker(ROUNDTRIM_ROUND_SIGNAL=value)
    r = roundtrim("round", proc.pid)
    assert r.returncode == 1
    assert "no round signal" in r.stderr
    time.sleep(0.2)
    assert proc.poll() is None


@pytest.mark.parametrize("value", ["YES", "On", "1"])
def test_round_never_signals_a_process_whose_library_is_disabled(spawn, ticker, value):
    """ROUNDTRIM_DISABLE read by the library's own parser (any case): the library forwards only
    and catches no signal, so the round signal would end the process."""
    proc, _ = spawn([ROUNDTRIM, "run", "--", ticker], env={"ROUNDTRIM_DISABLE": value},
                    preload=False, log=False)
    wait_until(lambda: LIB.name in Path(f"/proc/{proc.pid}/maps").read_text(),
               "the library to be loaded")
    r = roundtrim("round", proc.pid)
    assert r.returncode == 1
    assert "runs with ROUNDTRIM_DISABLE" in r.stderr and "not signalled" in r.stderr
    time.sleep(0.2)
    assert proc.poll() is None, "the process was killed by the round signal"


def test_round_never_signals_a_process_without_the_library(spawn):
    proc, _ = spawn(["sleep", "60"], preload=False, log=False)
    wait_until(lambda: "sleep" in Path(f"/proc/{proc.pid}/cmdline").read_text(),
               "sleep to start")
    r = roundtrim("round", proc.pid)
    assert r.returncode == 1
    assert "does not have libroundtrim.so loaded" in r.stderr
    assert "not signalled" in r.stderr
    time.sleep(0.3)
    assert proc.poll() is None, "the process was killed by the round signal"


def test_round_wait_prints_the_recorded_round_as_a_report_row(shimmed_ticker):
    proc, log = shimmed_ticker(log_name="rounds-%p.jsonl")  # %p resolved from the environment
    for n in (1, 2):
        r = roundtrim("round", proc.pid, "--wait", "30")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[1] == f"roundtrim: process {proc.pid} recorded round {n}"
        assert lines[2].split()[:4] == ["round", "time", "s", "source"]
        assert lines[3].split()[0] == str(n) and lines[3].split()[2] == "signal"
    assert len(round_records(Path(str(log).replace("%p", str(proc.pid))), proc.pid)) == 2
    assert proc.poll() is None


def test_round_wait_finds_a_log_named_after_the_host(shimmed_ticker, tmp_path):
    """%h in the log's name is the host name as the library writes it (a plain name)."""
    proc, _ = shimmed_ticker(log_name="rounds-%h-%p.jsonl")
    r = roundtrim("round", proc.pid, "--wait", "30")
    assert r.returncode == 0, r.stderr
    assert f"process {proc.pid} recorded round 1" in r.stdout
    log = tmp_path / f"rounds-{safe_host_name()}-{proc.pid}.jsonl"
    assert len(round_records(log, proc.pid)) == 1


def test_round_wait_gives_status_3_when_the_round_is_not_recorded_in_time(shimmed_ticker):
    """A stopped process keeps the signal pending: nothing is recorded until it runs again."""
    proc, log = shimmed_ticker()
    proc.send_signal(signal.SIGSTOP)
    try:
        r = roundtrim("round", "--wait", "0.5", proc.pid)
        assert r.returncode == 3, (r.stdout, r.stderr)
        assert f"process {proc.pid} recorded no round within 0.5 s" in r.stderr
        assert str(log) in r.stderr
    finally:
        proc.send_signal(signal.SIGCONT)
    # the signal was sent all the same: the round is recorded once the process runs
    wait_until(lambda: round_records(log, proc.pid), "the round after SIGCONT")


def test_round_wait_needs_a_round_log_it_can_read(spawn):
    proc, _ = spawn(["sleep", "60"], log=False)
    wait_until(lambda: LIB.name in Path(f"/proc/{proc.pid}/maps").read_text(), "the library")
    wait_until(lambda: catches(proc.pid, signal.SIGUSR1), "the round signal handler")
    r = roundtrim("round", proc.pid, "--wait")
    assert r.returncode == 1
    assert "has no round log" in r.stderr and "not signalled" in r.stderr
    time.sleep(0.2)
    assert proc.poll() is None


def readme_round_examples():
    """The `roundtrim round` examples of the command's guide that look the process up, as
    written."""
    text = (REPO / "docs" / "guide" / "roundtrim-command.md").read_text()
    found = [line.strip()[2:] for line in text.splitlines()
             if line.strip().startswith("$ roundtrim round") and "pgrep" in line]
    assert found, "docs/guide/roundtrim-command.md has no 'roundtrim round \"$(pgrep ...)\"' " \
        "example any more"
    return found


def run_example(tmp_path, command):
    """Runs a shell command line as a user would type it, with this tree's roundtrim first on
    PATH; from a script file, so that no command line holds what pgrep looks for."""
    script = tmp_path / "example.sh"
    script.write_text(command + "\n")
    env = clean_env()
    env["PATH"] = f"{ROUNDTRIM.parent}:{env['PATH']}"
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True,
                          timeout=60)


def assert_refused_unsignalled(r, words, proc, log):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert words in r.stderr and "nothing signalled" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 2, r.stderr


def test_round_readme_example_whose_lookup_finds_nothing_signals_nothing(shimmed_ticker,
                                                                        tmp_path):
    """`roundtrim round "$(pgrep -f ...)" --wait 10` with nothing found once took 10 for the
    process id. A helper of the test's own, which records a round for each SIGUSR1, is made the
    process such a mistake would signal (its id as the seconds, or as the only number)."""
    proc, log = shimmed_ticker()
    nothing = f"python3 no-such-train-{os.getpid()}-{time.monotonic_ns()}.py"
    for example in readme_round_examples():
        assert "python3 train.py" in example and "--wait 10" in example
        unmatched = example.replace("python3 train.py", nothing)
        for command in (unmatched, unmatched.replace("--wait 10", f"--wait {proc.pid}")):
            r = run_example(tmp_path, command)
            assert_refused_unsignalled(r, "the process id is empty", proc, log)
    r = roundtrim("round", "--wait", proc.pid)  # the process id forgotten
    assert_refused_unsignalled(r, "missing the process id", proc, log)
    r = roundtrim("round", "", "--wait", proc.pid)
    assert_refused_unsignalled(r, "the process id is empty", proc, log)
    time.sleep(0.3)
    assert round_records(log, proc.pid) == [] and proc.poll() is None
    # The helper does record a round signal: what the refusals above did not send.
    assert roundtrim("round", proc.pid).returncode == 0
    wait_until(lambda: round_records(log, proc.pid), "the round of the helper")


def test_round_readme_example_whose_lookup_finds_two_processes_signals_neither(
        shimmed_ticker, ticker, tmp_path):
    first, first_log = shimmed_ticker(log_name="first.jsonl")
    second, second_log = shimmed_ticker(log_name="second.jsonl")
    example = readme_round_examples()[0].replace("python3 train.py", str(ticker))
    r = run_example(tmp_path, example)
    assert_refused_unsignalled(r, "expected one process id, got several", first, first_log)
    assert str(first.pid) in r.stderr and str(second.pid) in r.stderr
    time.sleep(0.3)
    assert round_records(first_log, first.pid) == [] and first.poll() is None
    assert round_records(second_log, second.pid) == [] and second.poll() is None


def test_round_sends_a_real_time_round_signal_named_by_the_process(shimmed_ticker):
    proc, log = shimmed_ticker(ROUNDTRIM_ROUND_SIGNAL="RTMIN+1")
    assert catches(proc.pid, signal.SIGRTMIN + 1) and not catches(proc.pid, signal.SIGUSR1)
    r = roundtrim("round", proc.pid)
    assert r.returncode == 0, r.stderr
    assert f"sent SIGRTMIN+1 to process {proc.pid}" in r.stdout
    wait_until(lambda: round_records(log, proc.pid), "a round record after SIGRTMIN+1")
    assert proc.poll() is None


def test_round_on_a_process_that_does_not_exist():
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True)
    pid = int(done.stdout)
    if Path(f"/proc/{pid}").exists():
        pytest.skip("the pid was reused at once")
    r = roundtrim("round", pid)
    assert r.returncode == 1
    assert f"no process with id {pid}" in r.stderr


# ---- env --------------------------------------------------------------------------------------


def test_env_sh_is_valid_shell_and_preloads(tmp_path):
    r = roundtrim("env", "--role", "server")
    assert r.returncode == 0, r.stderr
    snippet = tmp_path / "snippet.sh"
    snippet.write_text(r.stdout)
    assert subprocess.run(["sh", "-n", snippet]).returncode == 0
    for name in option_names():
        assert re.search(rf"^(# )?export {name}=", r.stdout, re.M), name
    shown = subprocess.run(
        ["sh", "-c", '. "$1"; printf "%s|%s|%s|%s" "$LD_PRELOAD" "$ROUNDTRIM_ROLE" '
         '"$ROUNDTRIM_GC_ROUNDS" "$ROUNDTRIM_ARENA_MAX"', "sh", snippet],
        env=clean_env(LD_PRELOAD="/usr/lib/user-entry.so"), capture_output=True, text=True)
    assert shown.stdout == f"{LIB.resolve()}:/usr/lib/user-entry.so|server|5|4"


def test_env_docker_is_one_env_instruction_per_setting():
    r = roundtrim("env", "--format", "docker", "--lib", "/opt/roundtrim/lib/libroundtrim.so")
    assert r.returncode == 0, r.stderr
    names = option_names()
    set_here = {}
    for line in r.stdout.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r'ENV ([A-Z_]+)="([^"\\$]*)"', line)
        assert m, f"not an ENV instruction: {line!r}"
        set_here[m.group(1)] = m.group(2)
    assert set_here["LD_PRELOAD"] == "/opt/roundtrim/lib/libroundtrim.so"
    assert set_here["ROUNDTRIM_ROLE"] == "client"
    assert set(set_here) - {"LD_PRELOAD"} <= set(names)
    for name in names:
        assert re.search(rf"^(# )?ENV {name}=", r.stdout, re.M), name


def k8s_expand(value):
    """What Kubernetes makes of an env value: $(VAR) of a defined variable replaced (none here),
    $$ read as one literal $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: "$" if m.group(0) == "$$"
                  else m.group(0), value)


def test_env_k8s_quotes_a_hostile_library_path_as_yaml_and_kubernetes_read_it():
    yaml = pytest.importorskip("yaml")
    lib = '/opt/$(POD_NAME)/a"b\\c`id`$HOME\x01.so'
    r = roundtrim("env", "--format", "k8s", "--lib", lib)
    assert r.returncode == 0, r.stderr
    env = {item["name"]: item["value"] for item in yaml.safe_load(r.stdout)["env"]}
    assert env["LD_PRELOAD"] == lib.replace("$(", "$$(")
    assert k8s_expand(env["LD_PRELOAD"]) == lib


def test_env_k8s_is_an_env_list_with_the_role_values():
    r = roundtrim("env", "--format", "k8s", "--role", "server", "--lib", "/roundtrim/lib.so")
    assert r.returncode == 0, r.stderr
    names = option_names()
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml:
        doc = yaml.safe_load(r.stdout)
        env = {item["name"]: item["value"] for item in doc["env"]}
    else:  # structural check: "- name: X" followed by "value: "..."" lines
        pairs = re.findall(r'^  - name: (\S+)\n    value: "([^"]*)"$', r.stdout, re.M)
        env = dict(pairs)
    assert all(isinstance(v, str) for v in env.values())
    assert env["LD_PRELOAD"] == "/roundtrim/lib.so"
    tsv = subprocess.run([str(OPTIONS_TOOL), "--format", "tsv", "--role", "server"],
                         capture_output=True, text=True, check=True).stdout
    role_values = {row.split("\t")[0]: row.split("\t")[3] for row in tsv.splitlines()[1:]
                   if row.split("\t")[4] == "role"}
    assert role_values, "the table has no role-dependent option"
    for name, value in role_values.items():
        assert env[name] == value
    for name in names:
        assert f"name: {name}\n" in r.stdout


def test_env_names_what_is_missing_outside_a_build_tree(tmp_path):
    lone = tmp_path / "bin" / "roundtrim"
    lone.parent.mkdir()
    shutil.copy(ROUNDTRIM, lone)
    r = subprocess.run([lone, "env"], env=clean_env(), capture_output=True, text=True)
    assert r.returncode == 1
    assert "cannot find libroundtrim.so" in r.stderr and "--lib" in r.stderr
    r = subprocess.run([lone, "env", "--lib", "/opt/x/libroundtrim.so"], env=clean_env(),
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "cannot find roundtrim-options" in r.stderr and "make" in r.stderr


def test_installed_command_finds_its_library_and_helpers(tmp_path):
    """`make install` lays out bin/, lib/ and libexec/ the way the command looks for them."""
    dest = tmp_path / "dest"
    # A make of its own: under `make check` the outer make's job-server settings do not apply.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    made = subprocess.run(["make", "-s", "--no-print-directory", "install", f"DESTDIR={dest}",
                           "PREFIX=/opt/roundtrim"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    prefix = dest / "opt" / "roundtrim"
    link = tmp_path / "roundtrim"  # as in /usr/local/bin/roundtrim -> /opt/roundtrim/bin/...
    link.symlink_to(prefix / "bin" / "roundtrim")
    installed_lib = str((prefix / "lib" / "libroundtrim.so").resolve())
    r = subprocess.run([link, "run", "cat", "/proc/self/maps"], env=clean_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert installed_lib in r.stdout
    r = subprocess.run([link, "env", "--format", "k8s"], env=clean_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert f'value: "{installed_lib}"' in r.stdout
    r = subprocess.run([link, "report", SAMPLE_LOG], env=clean_env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "process 4101" in r.stdout
    sites_log = tmp_path / "sites.jsonl"  # the sites report's modules are installed too
    sites_log.write_text("".join(json.dumps({
        "event": "sites", "pid": 9, "round": n, "sample_bytes": 524288, "round_live": [],
        "live": [{"site": "a1", "live_bytes": n << 20, "python": [], "frames": []}]}) + "\n"
        for n in (1, 2, 3)))
    r = subprocess.run([link, "report", "--sites", sites_log], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "1. +1.0 MiB/round  live 3.0 MiB at round 3" in r.stdout
    for example in ("sub_start.sh", "entrypoint.sh", "Dockerfile", "pod.yaml"):
        assert (prefix / "share" / "roundtrim" / "examples" / example).is_file()
    # `make uninstall` with the same settings takes every file back.
    removed = subprocess.run(["make", "-s", "--no-print-directory", "uninstall", f"DESTDIR={dest}",
                              "PREFIX=/opt/roundtrim"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=120)
    assert removed.returncode == 0, removed.stderr
    assert [p for p in dest.rglob("*") if not p.is_dir()] == []


# ---- report -----------------------------------------------------------------------------------


def test_report_tables_every_process_of_a_shared_log():
    r = roundtrim("report", SAMPLE_LOG)
    assert r.returncode == 0, r.stderr
    assert "process 4101, role client" in r.stdout and "process 4102, role server" in r.stdout
    assert "incomplete last record" in r.stderr
    header = next(line for line in r.stdout.splitlines() if line.startswith("round"))
    for column in ("RSS before", "RSS after", "peak", "heap live", "device", "cleanup ms"):
        assert column in header
    assert "pressure warn: 85.4%" in r.stdout and "pressure clean: 90.3%" in r.stdout
    assert "gc,trim,torch_empty_cache,cuda_pool_trim" in r.stdout
    assert "RSS trend:" in r.stdout
    one = roundtrim("report", SAMPLE_LOG, "--pid", "4102")
    assert "4101" not in one.stdout and "process 4102" in one.stdout
    none = roundtrim("report", SAMPLE_LOG, "--pid", "77")
    assert none.returncode == 1 and "no records of process 77" in none.stderr


def test_report_on_an_unreadable_log(tmp_path):
    r = roundtrim("report", tmp_path / "missing.jsonl")
    assert r.returncode == 1
    assert "cannot read" in r.stderr and "missing.jsonl" in r.stderr


MIB = 1 << 20


def good_round(pid, n, **fields):
    """A round record as the library writes it: 16 MiB before, 15 after, a 17 MiB peak."""
    record = {"event": "round", "pid": pid, "round": n, "ts": 1000.0 + n, "source": "signal",
              "malloc_calls": 10, "free_calls": 9, "malloc_bytes": 4096, "free_bytes": 2048,
              "heap_live": 3 * MIB, "rss_before": 16 * MIB, "rss_after": 15 * MIB,
              "rss_peak": 17 * MIB, "cgroup_usage": 40 * MIB, "cleanup": ["trim"],
              "cleanup_us": 900, "allocator": "glibc"}
    record.update(fields)
    return record


def write_records(path, records):
    """One line per record; NaN and Infinity as Python's json module writes (and reads) them."""
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return path


def table_rows(stdout):
    """The data rows of the round tables: lists of cells, round number first."""
    return [line.split() for line in stdout.splitlines()
            if re.match(r" *\d+ +\d+\.\d +\S", line)]


@pytest.mark.parametrize("field, value, shown", [
    ("rss_before", "big", '"big"'),
    ("rss_after", [1, 2], "[1,2]"),
    ("rss_peak", {"mib": 17}, '{"mib":17}'),
    ("heap_live", True, "true"),
    ("cgroup_usage", False, "false"),
    ("rss_before", 1e308, "1e+308"),
    ("rss_after", -5, "-5"),
    ("heap_live", -1.5, "-1.5"),
    ("rss_peak", float("nan"), "NaN"),
    ("cgroup_usage", float("inf"), "Infinity"),
    ("cleanup_us", -float("inf"), "-Infinity"),
    ("rss_before", 2**64, "18446744073709551616"),
    ("rss_after", 10**300, "1" + "0" * 39 + "..."),
    ("ts", 1e300, "1e+300"),
    ("round", 2.5, "2.5"),
    ("round", "3", '"3"'),
    ("source", ["signal"], '["signal"]'),
    ("cleanup", ["trim", 7], '["trim",7]'),
    ("cleanup", "trim", '"trim"'),
    ("pid", True, "true"),
])
def test_report_skips_a_record_with_a_field_of_the_wrong_type_or_out_of_range(
        tmp_path, field, value, shown):
    log = write_records(tmp_path / "bad.jsonl", [good_round(77, 1), good_round(77, 2),
                                                  {**good_round(77, 3), field: value},
                                                  good_round(77, 4)])
    r = roundtrim("report", log)
    assert r.returncode == 0, r.stderr
    assert (f"{log}:3: round record skipped: {field} is {shown} (expected " in r.stderr), r.stderr
    assert (f"1 record of {log} skipped for a field of the wrong type or out of range "
            f"({field}); the report is on the others") in r.stderr
    rows = table_rows(r.stdout)
    assert [row[0] for row in rows] == ["1", "2", "4"]
    header = next(line for line in r.stdout.splitlines() if line.startswith("round"))
    for row in rows:  # every cell filled, none a 300-digit number
        assert row[2:9] == ["signal", "16.0", "15.0", "1.0", "17.0", "3.0", "40.0"], row
        assert max(len(cell) for cell in row) <= 10, row
    assert "cgroup" in header
    assert "3 rounds, 3 cleanups giving back 3.0 MiB" in r.stdout
    assert "first 15.0 MiB, last 15.0 MiB, highest peak 17.0 MiB" in r.stdout
    assert "RSS trend: +0.00 MiB per round" in r.stdout
    # the round's own row, as roundtrim round --wait prints it
    one = roundtrim("report", log, "--pid", 77, "--round", 4)
    assert one.returncode == 0, one.stderr
    assert [row[0] for row in table_rows(one.stdout)] == ["4"]
    assert roundtrim("report", log, "--pid", 77, "--round", 3).returncode == 1


def test_report_counts_and_names_every_skipped_record_and_keeps_the_rest(tmp_path):
    """Bad records of several kinds among two processes: each skipped with its line, the
    count and the fields said once, the rest of the report as without them."""
    good = [good_round(77, n) for n in (1, 2, 3)] + [good_round(88, n) for n in (1, 2)]
    good.append({"event": "exit", "pid": 88, "ts": 1010.0, "rounds": 2, "cleanups": 2,
                 "rss": 15 * MIB, "hooks_attached": ["fl:round"]})
    bad = [good_round(77, 4, rss_before="big"),
           good_round(77, 5, rss_peak=[17]),
           good_round(88, 3, heap_live={"x": 1}),
           {"event": "pressure", "pid": 77, "ts": 1003.5, "level": "warn", "used_bytes": 1,
            "limit_bytes": 2, "percent": "high", "limit_source": "cgroup"},
           {"event": "exit", "pid": 77, "ts": 1011.0, "rounds": 3, "cleanups": 3,
            "rss": 15 * MIB, "hooks_attached": ["fl:round", 5]},
           {"event": "start", "pid": 88, "ts": 999.0, "role": ["server"], "exe": "/bin/x"},
           good_round(77, 6, ts=float("nan")),
           good_round(88, 4, rss_after=-1)]
    log = write_records(tmp_path / "mixed.jsonl", good[:3] + bad[:4] + good[3:] + bad[4:])
    r = roundtrim("report", log)
    assert r.returncode == 0, r.stderr
    notes = r.stderr.splitlines()
    assert notes[:5] == [
        f"roundtrim report: {log}:4: round record skipped: rss_before is \"big\" (expected a "
        "number from 0 to below 2^64)",
        f"roundtrim report: {log}:5: round record skipped: rss_peak is [17] (expected a number "
        "from 0 to below 2^64)",
        f"roundtrim report: {log}:6: round record skipped: heap_live is {{\"x\":1}} (expected "
        "a number from 0 to below 2^64, or null)",
        f"roundtrim report: {log}:7: pressure record skipped: percent is \"high\" (expected a "
        "number from 0 to below 2^64)",
        f"roundtrim report: {log}:11: exit record skipped: hooks_attached is [\"fl:round\",5] "
        "(expected a list of text)",
    ]
    assert notes[5:] == [
        "roundtrim report: ... and 3 more lines skipped",
        f"roundtrim report: 8 records of {log} skipped for a field of the wrong type or out of "
        "range (rss_before, rss_peak, heap_live, percent, hooks_attached, role, ts, rss_after); "
        "the report is on the others",
    ]
    # no role for 88: its start record was skipped
    assert "process 77, allocator glibc\n" in r.stdout
    assert "process 88, allocator glibc\n" in r.stdout
    p77, p88 = r.stdout.split("process 88")
    assert [row[0] for row in table_rows(p77)] == ["1", "2", "3"]
    assert [row[0] for row in table_rows(p88)] == ["1", "2"]
    assert "pressure" not in r.stdout
    assert "3 rounds, 3 cleanups giving back 3.0 MiB" in p77
    assert "no exit record" in p77
    assert "exited after 2 rounds and 2 cleanups, RSS 15.0 MiB" in p88
    assert "hooks attached: fl:round" in p88


def assert_png(path, min_bytes=20_000):
    data = Path(path).read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > min_bytes, f"{path} is only {len(data)} bytes"


@pytest.mark.parametrize("plotter", ["matplotlib", "gnuplot"])
def test_report_draws_a_png(tmp_path, plotter):
    if plotter == "matplotlib" and subprocess.run(
            ["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode:
        pytest.skip("python3-matplotlib is not installed")
    if plotter == "gnuplot" and not shutil.which("gnuplot"):
        pytest.skip("gnuplot is not installed")
    png = tmp_path / "rounds.png"
    r = roundtrim("report", SAMPLE_LOG, "--png", png, env=clean_env(ROUNDTRIM_PLOTTER=plotter))
    assert r.returncode == 0, r.stderr
    assert f"plot written to {png}" in r.stdout
    assert_png(png)


@pytest.mark.parametrize("plotter", ["matplotlib", "gnuplot"])
@pytest.mark.parametrize("cgroup_mib, own_axis", [(2250, True), (40, False)])
def test_report_gives_a_cgroup_that_dwarfs_the_process_its_own_axis(tmp_path, plotter,
                                                                   cgroup_mib, own_axis):
    if plotter == "gnuplot" and not shutil.which("gnuplot"):
        pytest.skip("gnuplot is not installed")
    mib = 1 << 20
    log = tmp_path / "shared-cgroup.jsonl"
    log.write_text("".join(json.dumps({
        "event": "round", "pid": 77, "round": n, "ts": 1000.0 + n, "source": "signal",
        "rss_before": 16 * mib, "rss_after": 15 * mib, "rss_peak": 17 * mib,
        "heap_live": 3 * mib, "cgroup_usage": (cgroup_mib + n) * mib, "cleanup": ["trim"],
        "cleanup_us": 900}) + "\n" for n in range(1, 5)))
    png = tmp_path / "plot.png"
    r = roundtrim("report", log, "--png", png, env=clean_env(ROUNDTRIM_PLOTTER=plotter))
    assert r.returncode == 0, r.stderr
    assert_png(png, min_bytes=10_000)
    note = "process 77: the cgroup's memory use is"
    assert (note in r.stdout) == own_axis, r.stdout
    if own_axis:
        assert "times the process's and has an axis of its own (right)" in r.stdout


def test_report_without_a_plotting_tool_still_prints_the_table(tmp_path):
    env = clean_env(ROUNDTRIM_PLOTTER="none")
    r = roundtrim("report", SAMPLE_LOG, "--png", tmp_path / "x.png", env=env)
    assert r.returncode == 1
    assert "process 4101" in r.stdout
    assert "python3-matplotlib" in r.stderr and "gnuplot-nox" in r.stderr
    assert roundtrim("report", SAMPLE_LOG, env=env).returncode == 0


def test_report_on_a_real_log(shimmed_ticker, tmp_path):
    """Three rounds announced with `roundtrim round` to a shimmed process, then reported."""
    proc, log = shimmed_ticker()
    pid = proc.pid
    for n in range(1, 4):
        assert roundtrim("round", pid).returncode == 0
        wait_until(lambda: len(round_records(log, pid)) >= n, f"round {n}")
    proc.kill()
    proc.wait(timeout=10)
    png = tmp_path / "real.png"
    r = roundtrim("report", log, "--png", png)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    assert [row[0] for row in rows if row and row[0].isdigit()][:3] == ["1", "2", "3"]
    assert f"process {pid}" in r.stdout
    assert_png(png, min_bytes=10_000)


# ---- examples ---------------------------------------------------------------------------------


def shellcheck(*paths_or_stdin, stdin=None):
    if not shutil.which("shellcheck"):
        pytest.fail("shellcheck is not installed (Debian: apt-get install shellcheck)")
    return subprocess.run(["shellcheck", "-s", "sh", *map(str, paths_or_stdin)], input=stdin,
                          capture_output=True, text=True)


def test_the_shell_of_the_command_and_the_examples_passes_shellcheck():
    r = shellcheck(ROUNDTRIM, EXAMPLES / "sub_start.sh", EXAMPLES / "entrypoint.sh")
    assert r.returncode == 0, r.stdout


def test_the_dockerfile_run_steps_pass_shellcheck_and_fit_the_entrypoint():
    text = (EXAMPLES / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    runs = [m.group(1) for m in re.finditer(r"^RUN (.*)$", joined, re.M)]
    assert runs
    r = shellcheck("-", stdin="#!/bin/sh\n" + "\n".join(runs) + "\n")
    assert r.returncode == 0, r.stdout
    entry = re.search(r'^ENTRYPOINT \["([^"]+)"\]', text, re.M).group(1)
    assert re.search(rf"^COPY scripts/examples/entrypoint.sh {re.escape(entry)}$", text, re.M)
    names = option_names()
    for name in re.findall(r"\b(ROUNDTRIM_[A-Z_]+)=", joined):
        assert name in names or name == "ROUNDTRIM_LIB", name


def test_the_sub_start_snippet_preloads_the_library(tmp_path):
    env = clean_env(ROUNDTRIM_LIB=LIB.resolve(), TMPDIR=tmp_path)
    r = subprocess.run(["sh", "-c", '. "$1" && exec cat /proc/self/maps', "sh",
                        EXAMPLES / "sub_start.sh"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert str(LIB.resolve()) in r.stdout
    # Without the library the client still starts, with one warning.
    env["ROUNDTRIM_LIB"] = str(tmp_path / "absent.so")
    r = subprocess.run(["sh", "-c", '. "$1" && echo started', "sh", EXAMPLES / "sub_start.sh"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.stdout == "started\n" and "absent.so not found" in r.stderr


def test_the_entrypoint_preloads_the_library_into_its_command():
    env = clean_env(ROUNDTRIM_LIB=LIB.resolve())
    r = subprocess.run([EXAMPLES / "entrypoint.sh", "cat", "/proc/self/maps"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert str(LIB.resolve()) in r.stdout
    r = subprocess.run([EXAMPLES / "entrypoint.sh"], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "no command" in r.stderr


def test_the_pod_spec_preloads_from_a_mounted_volume():
    text = (EXAMPLES / "pod.yaml").read_text()
    yaml = pytest.importorskip("yaml")
    pod = yaml.safe_load(text)
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert all(isinstance(v, str) for v in env.values())
    names = option_names()
    assert set(env) - {"LD_PRELOAD"} <= set(names)
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    lib_dir = os.path.dirname(env["LD_PRELOAD"])
    assert lib_dir in mounts, "LD_PRELOAD must point into a mounted volume"
    init = pod["spec"]["initContainers"][0]
    assert env["LD_PRELOAD"] in init["command"]
    assert any(m["name"] == mounts[lib_dir] for m in init["volumeMounts"])


# ---- the configuration page's table ----------------------------------------------------------


def test_the_configuration_pages_table_is_the_option_table():
    page = REPO / "docs" / "reference" / "configuration.md"
    assert page.is_file(), f"{page} is missing"
    m = re.search(r"<!-- options:begin -->\n(.*?)<!-- options:end -->", page.read_text(), re.S)
    assert m, f"{page} lacks the <!-- options:begin --> / <!-- options:end --> markers"
    table = subprocess.run([str(OPTIONS_TOOL), "--format", "markdown"], capture_output=True,
                           text=True, check=True).stdout
    assert m.group(1).strip() == table.strip(), \
        f"{page}'s variable table differs from the option table: run 'make docs'"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
