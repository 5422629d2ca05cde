"""The shim in processes that do unusual things: another allocator preloaded before or after
roundtrim, children that share the parent's memory (vfork, clone(CLONE_VM), posix_spawn), a
program that takes the round signal back, a program that needs to be single-threaded
(unshare, setns), and CPython's own test suites run with and without the shim."""

import os
import re
import signal
import subprocess

import pytest

from conftest import LIB, PYTHON, prog

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# file name -> the name the round record gives it
ALLOCATORS = {
    "libjemalloc.so.2": "jemalloc",
    "libtcmalloc_minimal.so.4": "libtcmalloc_minimal.so.4",
    "libtcmalloc.so.4": "libtcmalloc.so.4",
    "libmimalloc.so.2": "libmimalloc.so.2",
}
COUNT_KEYS = ("malloc_calls", "free_calls", "malloc_bytes", "free_bytes")

PY_ALLOCATING = (
    "import ctypes, json\n"
    "data = json.loads(json.dumps({str(i): [i] * 50 for i in range(2000)}))\n"
    "ctypes.CDLL(None).roundtrim_round_end()\n"
    "print(len(data))\n"
)


def preload_for(allocator, order):
    other = os.path.join(LIBDIR, allocator)
    if not os.path.exists(other):
        pytest.skip(f"{other} is not installed")
    return f"{LIB} {other}" if order == "after" else f"{other} {LIB}"


def assert_counts_marked_unseen(res):
    """The program's malloc is not ours: every record says so instead of showing zeros."""
    assert res.rounds, res.stderr
    for rec in res.records:
        if rec["event"] in ("round", "exit"):
            assert rec["counts_skipped"] == "allocator_before_roundtrim", rec
            assert all(rec[k] is None for k in COUNT_KEYS), rec


@pytest.mark.parametrize("order", ["after", "before"])
@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_other_allocator_in_either_order(run_shim, allocator, order):
    """"after": roundtrim forwards to the allocator and counts exactly what it hands out;
    "before": the allocator serves the program directly, and the records say the counts were not
    seen, naming the allocator (never "glibc" with zeros)."""
    env = {"LD_PRELOAD": preload_for(allocator, order)}
    name = ALLOCATORS[allocator]

    true = run_shim(["/bin/true"], env=env)
    assert (true.returncode, true.stderr) == (0, "")

    c = run_shim([prog("alloc_counts")], env=env)
    assert c.returncode == 0, c.stderr
    assert [r["allocator"] for r in c.rounds] == [name] * 4
    assert c.records[0]["allocator"] == name
    if order == "after":
        want = {r["round"]: r for r in c.stdout_json()}
        got = {r["round"]: r for r in c.rounds}
        for n in (2, 3, 4):
            assert {k: got[n][k] for k in COUNT_KEYS} == {k: want[n][k] for k in COUNT_KEYS}, n
        assert "counts_skipped" not in got[2]
    else:
        assert_counts_marked_unseen(c)

    cxx = run_shim([prog("cxx_counts"), "--no-bad-alloc"], env=env)
    assert cxx.returncode == 0, cxx.stderr
    if order == "after":
        want, got = cxx.stdout_json()[0], cxx.rounds[1]
        # one more block: the std::bad_alloc object the program throws and catches
        assert got["malloc_calls"] == want["malloc_calls"] + 1
        assert got["free_calls"] == want["free_calls"] + 1
        extra = got["malloc_bytes"] - want["malloc_bytes"]
        assert 0 < extra < 1024 and got["free_bytes"] - want["free_bytes"] == extra
    else:
        assert_counts_marked_unseen(cxx)

    py = run_shim([PYTHON, "-c", PY_ALLOCATING], env=env)
    assert (py.returncode, py.stdout) == (0, "2000\n"), py.stderr
    assert [r["allocator"] for r in py.rounds] == [name]
    if order == "after":
        assert py.rounds[0]["malloc_calls"] > 2000 and py.rounds[0]["malloc_bytes"] > 0
    else:
        assert_counts_marked_unseen(py)


def test_allocator_built_into_the_executable_is_unknown_and_not_counted(run_shim):
    res = run_shim([prog("builtin_malloc")])
    assert res.returncode == 0, res.stderr
    assert [r["allocator"] for r in res.rounds] == ["unknown"]
    assert_counts_marked_unseen(res)


def test_glibc_program_records_its_counts_as_before(run_shim):
    res = run_shim([PYTHON, "-c", PY_ALLOCATING])
    assert res.returncode == 0
    rec = res.rounds[0]
    assert rec["allocator"] == "glibc" and "counts_skipped" not in rec
    assert rec["malloc_calls"] > 2000


@pytest.mark.parametrize("mode", ["vfork", "clone", "spawn"])
def test_children_sharing_memory_change_nothing_of_the_parent(run_shim, mode):
    """The child sets SIGUSR1 (the round signal) back to default with sigaction and signal and
    allocates before exec/_exit: the parent's own handler still runs afterwards, and the
    parent's raise still marks a round."""
    bare = run_shim([prog("vm_child_signals"), mode], preload=False, log=False)
    shim = run_shim([prog("vm_child_signals"), mode])
    assert bare.stdout == shim.stdout == "handler ran 1\n", shim.stderr
    assert shim.returncode == 0
    assert [r["source"] for r in shim.rounds] == ["signal"]


PY_SUBPROCESS_THEN_SIGNAL = """
import os, signal, subprocess, sys, time
seen = []
signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
subprocess.run(["true"], check=True)
subprocess.run(["kill", "-USR1", str(os.getpid())], check=True)
deadline = time.monotonic() + 10
while not seen and time.monotonic() < deadline:
    time.sleep(0.01)
print("handled" if seen else "not handled")
"""


def test_python_handler_survives_a_subprocess(run_shim):
    """CPython's subprocess resets every handler in its vfork child before exec."""
    bare = run_shim([PYTHON, "-c", PY_SUBPROCESS_THEN_SIGNAL], preload=False, log=False)
    shim = run_shim([PYTHON, "-c", PY_SUBPROCESS_THEN_SIGNAL])
    assert bare.stdout == shim.stdout == "handled\n", shim.stderr
    assert [r["source"] for r in shim.rounds] == ["signal"]


OFF_LINE = re.compile(r"^roundtrim: the program set SIGUSR1 to its default action", re.M)


@pytest.mark.parametrize("how", ["default", "signal-default"])
def test_program_setting_sig_dfl_gets_the_default_action(run_shim, how):
    bare = run_shim([prog("round_signal_default"), how], preload=False, log=False)
    shim = run_shim([prog("round_signal_default"), how])
    assert bare.returncode == shim.returncode == -signal.SIGUSR1
    assert "survived" not in shim.stdout
    # said once, on stderr and in the next record; rounds by call go on
    assert len(OFF_LINE.findall(shim.stderr)) == 1, shim.stderr
    assert [(r["source"], r.get("signal_rounds_off")) for r in shim.rounds] == [
        ("call", "program_set_default")]


def test_program_ignoring_the_round_signal_is_honoured_until_it_handles_it(run_shim):
    bare = run_shim([prog("round_signal_default"), "ignore"], preload=False, log=False)
    shim = run_shim([prog("round_signal_default"), "ignore"])
    assert bare.stdout == shim.stdout == "ignored, then handled 1\n"
    assert shim.returncode == 0
    # ignored: no round; its own handler installed afterwards: rounds by signal again
    assert [(r["source"], r.get("signal_rounds_off")) for r in shim.rounds] == [
        ("call", "program_set_ignore"), ("signal", None)]
    assert shim.stderr.count("rounds by that signal are off while it stays so") == 1


def test_default_then_a_handler_of_its_own_marks_rounds_again(run_shim):
    """A shell's trap, and many daemons, reset the signal to SIG_DFL before installing their
    handler: the handler runs as without roundtrim and rounds by signal go on, with no note
    that they are off."""
    bare = run_shim([prog("round_signal_default"), "default-then-handler"], preload=False,
                    log=False)
    shim = run_shim([prog("round_signal_default"), "default-then-handler"])
    assert bare.stdout == shim.stdout == "default, then handled 1\n"
    assert shim.returncode == 0
    assert [(r["source"], r.get("signal_rounds_off")) for r in shim.rounds] == [
        ("signal", None), ("call", None)]
    assert "signal_rounds_off" not in shim.records[-1]
    assert "roundtrim:" not in shim.stderr


BASH_TRAP = 'trap "echo trapped" USR1; kill -USR1 $$; echo done'


def test_bash_trap_on_the_round_signal_keeps_rounds(run_shim):
    bare = run_shim(["bash", "-c", BASH_TRAP], preload=False, log=False)
    shim = run_shim(["bash", "-c", BASH_TRAP])
    assert bare.stdout == shim.stdout == "trapped\ndone\n"
    assert [r["source"] for r in shim.rounds] == ["signal"]


PY_FAULTHANDLER_UNREGISTER = """
import faulthandler, os, signal, sys
faulthandler.register(signal.SIGUSR1)
faulthandler.unregister(signal.SIGUSR1)
os.kill(os.getpid(), signal.SIGUSR1)
print("survived")
"""


def test_faulthandler_unregister_restores_the_default_action(run_shim):
    bare = run_shim([PYTHON, "-c", PY_FAULTHANDLER_UNREGISTER], preload=False, log=False)
    shim = run_shim([PYTHON, "-c", PY_FAULTHANDLER_UNREGISTER])
    assert bare.returncode == shim.returncode == -signal.SIGUSR1
    assert bare.stdout == shim.stdout == ""


@pytest.mark.parametrize("op", ["unshare", "setns"])
def test_user_namespace_with_the_worker_running(run_shim, op):
    """With the worker started at process start, unshare(CLONE_NEWUSER) and setns into a user
    namespace give the same result as without roundtrim, and rounds go on afterwards."""
    bare = run_shim([prog("namespace_ops"), op], preload=False, log=False)
    if f"{op} ok" not in bare.stdout:
        pytest.skip(f"the kernel refuses user namespaces here: {bare.stdout.strip()}")
    shim = run_shim([prog("namespace_ops"), op], env={"ROUNDTRIM_EAGER_WORKER": "1"})
    assert shim.stdout == f"{op} ok\nrounds 2\n", shim.stderr
    assert [r["source"] for r in shim.rounds] == ["call", "call"]


PY_UNSHARE = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
log = os.environ.get("ROUNDTRIM_LOG")

def round_recorded(n):
    # ends a round and waits for its record: its cleanup ran gc on roundtrim's Python helper
    libc.roundtrim_round_end()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if os.path.exists(log) and open(log).read().count('"event":"round"') >= n:
            return
        time.sleep(0.01)
    sys.exit("no record")

if log:
    round_recorded(1)
rc = libc.unshare(0x10000000)  # CLONE_NEWUSER
print("unshare", "ok" if rc == 0 else os.strerror(ctypes.get_errno()))
if log:
    round_recorded(2)
"""


def test_user_namespace_in_a_python_process_after_gc_rounds(run_shim):
    """A Python process has a second thread of roundtrim's once a cleanup ran gc: it is ended
    for the call too, and started again by the next round's gc."""
    bare = run_shim([PYTHON, "-c", PY_UNSHARE], preload=False, log=False)
    if bare.stdout != "unshare ok\n":
        pytest.skip(f"the kernel refuses user namespaces here: {bare.stdout.strip()}")
    shim = run_shim([PYTHON, "-c", PY_UNSHARE])
    assert (shim.returncode, shim.stdout) == (0, "unshare ok\n"), shim.stderr
    assert [r["cleanup"][:1] for r in shim.rounds] == [["gc"], ["gc"]]


# CPython's own suites, run with and without the shim: the verdicts must be the same. make check
# runs the short ones; make cpython-check sets CPYTHON_SUITES to the long ones.
CPYTHON_SUITES = os.environ.get("CPYTHON_SUITES", "test_signal test_faulthandler").split()


# The modules in which the wide comparison (make cpython-wide) once found a difference, run under
# -X dev with cleanup every round and a timer round: test_posix (a child that raises SIGUSR1 at
# itself with no handler must die by it), test_os (children under -X dev), test_threading (a
# child forked from a thread must end when that thread returns).
CPYTHON_DEV_SUITES = os.environ.get("CPYTHON_DEV_SUITES",
                                    "test_posix test_os test_threading").split()
ROUNDS_EVERYWHERE = {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "1", "ROUNDTRIM_INTERVAL_S": "1"}


def cpython_verdict(suite, preload, tmp_path, dev=False, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_")) and k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = str(LIB)
        env["ROUNDTRIM_LOG"] = str(tmp_path / f"{suite}.%p.jsonl")
        env.update(extra or {})
    # -w: a test that fails is run again once (the suites have a few timing-sensitive tests);
    # --timeout: a hang is a failure, not a stuck run
    argv = [PYTHON] + (["-X", "dev"] if dev else []) + ["-m", "test", "-w", "--timeout", "300",
                                                          suite]
    # SIGINT as an interactive shell leaves it: a run started in the background inherits it
    # ignored, and test_threading's interrupt_main tests then fail bare and preloaded alike.
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900,
                          cwd=tmp_path,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return proc.returncode, proc.stdout[-3000:]


@pytest.mark.parametrize("suite", CPYTHON_SUITES)
def test_cpython_suite_gives_the_same_verdict(tmp_path, suite):
    if subprocess.run([PYTHON, "-c", f"import test.{suite}"], capture_output=True).returncode:
        pytest.skip(f"CPython's {suite} is not installed (libpython3-testsuite)")
    bare = cpython_verdict(suite, False, tmp_path)
    shim = cpython_verdict(suite, True, tmp_path)
    assert shim[0] == bare[0], shim[1]


@pytest.mark.parametrize("suite", CPYTHON_DEV_SUITES)
def test_cpython_suite_under_dev_mode_with_rounds_everywhere_gives_the_same_verdict(tmp_path,
                                                                                   suite):
    if subprocess.run([PYTHON, "-c", f"import test.{suite}"], capture_output=True).returncode:
        pytest.skip(f"CPython's {suite} is not installed (libpython3-testsuite)")
    bare = cpython_verdict(suite, False, tmp_path, dev=True)
    shim = cpython_verdict(suite, True, tmp_path, dev=True, extra=ROUNDS_EVERYWHERE)
    assert bare[0] == 0, bare[1]
    assert shim[0] == bare[0], shim[1]


@pytest.mark.parametrize("first", ["other", "roundtrim"])
def test_exec_from_a_constructor_that_runs_before_roundtrims_works(first):
    """A library preloaded beside roundtrim execs from its constructor: whichever constructor
    runs first, the exec replaces the program as it does without roundtrim."""
    other = prog("libearly_exec.so")
    order = f"{other} {LIB}" if first == "other" else f"{LIB} {other}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUNDTRIM_", "LD_"))}
    env["LD_PRELOAD"] = order
    res = subprocess.run(["/bin/true"], env=env, capture_output=True, timeout=30)
    assert (res.returncode, res.stdout) == (0, b"exec-ok\n"), res.stderr



@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_variants_an_allocator_ahead_lacks_go_back_to_it(run_shim, allocator):
    """An allocator preloaded ahead of roundtrim serves the program; the variants it lacks
    (Debian's jemalloc has no pvalloc, reallocarray or free_sized) reach roundtrim's, which must
    take and give back its blocks through that allocator, not through the one after roundtrim."""
    env = {"LD_PRELOAD": preload_for(allocator, "before")}
    script = (
        "import ctypes\n"
        "c = ctypes.CDLL(None)\n"
        "for f in ('pvalloc', 'valloc', 'reallocarray', 'malloc', 'realloc'):\n"
        "    getattr(c, f).restype = ctypes.c_void_p\n"
        "c.reallocarray.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)\n"
        "c.realloc.argtypes = (ctypes.c_void_p, ctypes.c_size_t)\n"
        "for f in ('free', 'free_sized'):\n"
        "    getattr(c, f).argtypes = (ctypes.c_void_p,) + (ctypes.c_size_t,) * (f != 'free')\n"
        "for i in range(200):\n"
        "    p = c.pvalloc(100 + i); q = c.valloc(5000)\n"
        "    r = c.reallocarray(c.malloc(64), 100, 10 + i)\n"
        "    c.free_sized(c.realloc(p, 20000), 20000); c.free(q); c.free_sized(r, 1000)\n"
        "print('ok')\n")
    res = run_shim([PYTHON, "-c", script], env=env, log=False)
    assert (res.returncode, res.stdout) == (0, "ok\n"), res.stderr[-2000:]
