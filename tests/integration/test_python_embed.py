"""Programs that embed CPython and start and end interpreters again and again (Py_Initialize,
Py_FinalizeEx), as plugin hosts and test runners do, while rounds end every millisecond: the
process behaves as bare (no abort, nothing more on stderr), and each new interpreter gets
roundtrim's gc again (tests/programs/embed_cycles.c)."""

import sysconfig
from pathlib import Path

import pytest

from conftest import prog

# Every round's cleanup runs the gc job: the most chances for it to meet a finalization.
ENV = {"ROUNDTRIM_GC_ROUNDS": "1", "ROUNDTRIM_ADAPTIVE": "false"}
# The abort came in about 1 run in 3 of 40 cycles before the fix: 6 runs all pass by chance
# about once in a hundred.
RUNS = 6


def embed_cycles():
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.exists():
        pytest.skip(f"needs CPython's embedding headers ({header}: python3-dev) to build "
                    "tests/programs/embed_cycles.c")
    return prog("embed_cycles")


def interpreters(stdout):
    """The interpreters that ran to their end, without what they saw of collections (roundtrim's
    gc may come in any of them, bare none)."""
    return [line.rsplit(" ", 1)[0] for line in stdout.splitlines()]


@pytest.mark.parametrize("variant", [["plain"], ["threading"], ["plain", "lookup"]],
                         ids=["plain", "threading", "lookup"])
def test_restarted_interpreters_run_as_bare(run_shim, variant):
    """With threading imported in each interpreter or not, and with Py_Finalize[Ex] called as
    linked or found with dlsym on libpython's handle (lookup): every run ends 0, runs all 40
    interpreters, writes nothing on stderr (no "Fatal Python error", no "Exception ignored" from a
    __del__ run by a collection in the middle of finalization), and records its rounds."""
    exe = embed_cycles()
    bare = run_shim([exe, "40", *variant], preload=False, log=False)
    assert bare.returncode == 0 and bare.stderr == "", bare.stderr
    for run in range(RUNS):
        res = run_shim([exe, "40", *variant], env=ENV)
        assert (res.returncode, res.stderr) == (0, ""), f"run {run}: {res.stderr[-3000:]}"
        assert interpreters(res.stdout) == interpreters(bare.stdout)
        assert len(res.rounds) > 10
        assert any("gc" in r["cleanup"] for r in res.rounds)


@pytest.mark.parametrize("variant", ["plain", "threading"])
def test_every_new_interpreter_gets_roundtrims_gc(run_shim, variant):
    """Each interpreter turns automatic gc off and waits (5 s at most) for a full collection it
    did not make: roundtrim's, at a round's cleanup. Before, the first interpreter's threading
    shutdown stopped the jobs of every later one."""
    res = run_shim([embed_cycles(), "4", variant, "wait"], env=ENV)
    assert (res.returncode, res.stderr) == (0, ""), res.stderr[-3000:]
    assert res.stdout.splitlines() == [
        f"interpreter {n} collected_by_other yes" for n in range(1, 5)]
    # Between two interpreters the records say why there was no gc, in words the log documents
    # (and the rounds recorded while the process exits, "exiting").
    skipped = {r.get("gc_skipped") for r in res.rounds} - {None}
    assert skipped <= {"no_interpreter", "finalizing", "busy", "gil_timeout", "exiting"}, skipped
