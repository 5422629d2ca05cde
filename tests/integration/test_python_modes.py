"""Every interpreter mode runs as it does bare: development mode and the debug allocators free at
finalization what the library handed the interpreter before it started, so each Python on the
machine exits with the same status and output, and the round hooks still end every round."""

import glob
import os

import pytest

from conftest import PYTHON

# The round function lives in a module (functions of __main__ attach only at a later event);
# sys.path is set by the program itself, since -I and -E ignore PYTHONPATH.
MODULE = "def round_fn(i):\n    return i * 2\n"
PROGRAM = """
import sys, time
sys.path.insert(0, %r)
import rt_mode_rounds
for i in range(4):
    rt_mode_rounds.round_fn(i)
    time.sleep(0.02)
print("done", sys.flags.dev_mode, sys.flags.isolated, sys.flags.no_site)
"""

MODES = [
    (["-X", "dev"], {}),
    ([], {"PYTHONDEVMODE": "1"}),
    ([], {"PYTHONMALLOC": "debug"}),
    ([], {"PYTHONMALLOC": "malloc_debug"}),
    ([], {"PYTHONMALLOC": "pymalloc_debug"}),
    ([], {"PYTHONMALLOC": "malloc"}),
    ([], {"PYTHONMALLOC": "pymalloc"}),
    (["-X", "tracemalloc"], {}),
    (["-I"], {}),
    (["-S"], {}),
    (["-E"], {}),
    (["-X", "dev", "-I"], {"PYTHONMALLOC": "debug"}),
]
MODE_IDS = [" ".join(f + [f"{k}={v}" for k, v in e.items()]) for f, e in MODES]


def pythons():
    """Debian's interpreter and every CPython 3.8-3.13 of pyenv's that is on the machine."""
    found = [PYTHON]
    for minor in range(8, 14):
        found += sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3"))[-1:]
    return [p for p in found if os.access(p, os.X_OK)]


@pytest.mark.parametrize("python", pythons())
@pytest.mark.parametrize("flags,extra", MODES, ids=MODE_IDS)
def test_mode_exits_as_bare_with_hooks_on(run_shim, tmp_path, python, flags, extra):
    (tmp_path / "rt_mode_rounds.py").write_text(MODULE)
    argv = [python, *flags, "-c", PROGRAM % str(tmp_path)]
    bare = run_shim(argv, env=extra, preload=False, log=False)
    env = dict(extra, ROUNDTRIM_PY_HOOK="rt_mode_rounds:round_fn", ROUNDTRIM_GC_ROUNDS="1")
    shim = run_shim(argv, env=env)
    assert bare.returncode == 0, bare.stderr
    assert shim.returncode == bare.returncode, shim.stderr
    assert shim.stdout == bare.stdout
    assert shim.stderr == bare.stderr
    # The hook ends each of the four rounds, the last included (it used to die with the abort).
    assert len(shim.rounds) == 4, shim.records
    assert all(r["source"] == "python" for r in shim.rounds)
    exits = [r for r in shim.records if r.get("event") == "exit"]
    assert len(exits) == 1


def old_pythons():
    """CPython 3.6 and 3.7 of pyenv's, where the machine has them: no audit hooks there."""
    found = []
    for minor in (6, 7):
        found += sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3"))[-1:]
    return [p for p in found if os.access(p, os.X_OK)] or [None]


@pytest.mark.parametrize("python", old_pythons())
def test_a_python_without_audit_hooks_runs_its_rounds_with_gc(run_shim, python):
    """Before 3.8 the round hooks and the holder search have no API to use: the rounds still
    get their gc, and the program exits as bare (it died by SIGSEGV at its first round)."""
    if python is None:
        pytest.skip("no CPython 3.6 or 3.7 on this machine (pyenv)")
    program = ("import ctypes, time\n"
               "end = getattr(ctypes.CDLL(None), 'roundtrim_round_end', lambda: 0)\n"
               "for r in range(4):\n"
               "    end()\n"
               "    time.sleep(0.2)\n"
               "print('done')\n")
    bare = run_shim([python, "-c", program], preload=False, log=False)
    shim = run_shim([python, "-c", program], env={"ROUNDTRIM_GC_ROUNDS": "1",
                                                   "ROUNDTRIM_ADAPTIVE": "false"})
    assert (shim.returncode, shim.stdout) == (bare.returncode, bare.stdout) == (0, "done\n"), \
        shim.stderr
    # every round gets its gc, but one still pending at exit on a slow host ("exiting")
    assert len(shim.rounds) >= 3
    assert all("gc" in r["cleanup"] or r.get("gc_skipped") == "exiting" for r in shim.rounds), \
        shim.rounds
    assert "gc" in shim.rounds[0]["cleanup"], shim.rounds
