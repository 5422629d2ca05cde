"""Allocation sites under the libraries a client calls: PyTorch, NumPy, a ctypes call. The
libraries allocate in C, PyTorch and ctypes with the GIL released, and the user still reads
the line that keeps the memory first, with the runtimes' native frames folded under it.

The program (tests/python/sites_keep.py) keeps one 1 MiB model copy per round among ten times
as much in temporaries; its lines marked `# kept:KIND` are the lines a user must be shown."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "sites_keep.py"
ROUNDTRIM = ROOT / "scripts" / "roundtrim"
PYENV = Path("/root/.pyenv/versions")
# Debian's 3.11 always; the other versions frames are read on where pyenv has them.
PYTHONS = [PYTHON] + [str(PYENV / v / "bin" / "python3") for v in ("3.12.1", "3.13.0")]
# At this mean a 1 MiB block is sampled every time (1 - e^-16): the kept copies are exact.
SAMPLE = "65536"
FOLDED = re.compile(r"^(\d+) runtime frames? folded \((.*); --native shows them\)$")
KEPT_LINES = {
    m.group(1): n
    for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
    for m in [re.search(r"# kept:(\w+)", line)]
    if m
}
FUNCTIONS = {"torch": "torch_round", "numpy": "numpy_round", "ctypes": "ctypes_round"}


def has_module(python, name):
    return subprocess.run([python, "-c", f"import {name}"], capture_output=True,
                          timeout=120).returncode == 0


def run_keep(run_shim, kind, python=PYTHON, thread=False):
    if python != PYTHON and not os.access(python, os.X_OK):
        pytest.skip(f"{python} is not installed")
    if kind != "ctypes" and not has_module(python, kind):
        pytest.skip(f"{kind} is not installed for {python}")
    argv = [python, SCRIPT, kind, "6"] + (["--thread"] if thread else [])
    res = run_shim(argv, env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": SAMPLE},
                   timeout=180)
    assert res.returncode == 0, res.stderr
    assert [r["round"] for r in res.stdout_json()] == list(range(1, 7))
    return res


def report(log, *options):
    r = subprocess.run([str(ROUNDTRIM), "report", "--sites", *options, str(log)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return r.stdout


def top_site(text):
    """The first growing site of a report: its heading and its stack lines."""
    lines = text.splitlines()
    first = next(i for i, l in enumerate(lines) if l.strip().startswith("1. +"))
    stack = []
    for line in lines[first + 1:]:
        if not line.startswith("        "):
            break
        stack.append(line.strip())
    return lines[first], stack


def functions(stack):
    """The functions of a stack's Python frames ("file:line function")."""
    return [line.rsplit(" ", 1)[1] for line in stack if not FOLDED.match(line)]


def assert_user_line_leads(res, kind):
    """The report's top growing site starts at the program's own line, its Python callers
    follow, and every native frame under them is a runtime's, folded into the last line."""
    kept = f"{SCRIPT}:{KEPT_LINES[kind]} {FUNCTIONS[kind]}"
    heading, stack = top_site(report(res.log_path))
    rate = float(re.search(r"\+([\d.]+) (KiB|MiB)/round", heading).group(1))
    assert "MiB/round" in heading and 0.9 <= rate <= 1.3, heading
    assert stack[0] == kept, "\n".join([heading] + stack)
    folded = FOLDED.match(stack[-1])
    assert folded, stack
    # Nothing between the Python frames and the fold: the program has no native code of its own.
    assert all(re.match(r"^/.*:\d+ \S+$", line) for line in stack[:-1]), stack
    return stack, int(folded.group(1)), folded.group(2).split(", ")


def test_a_tensor_kept_per_round_is_named_by_the_line_that_keeps_it(run_shim):
    """`keep.append(base.clone())`: PyTorch allocates with the GIL released."""
    res = run_keep(run_shim, "torch")
    stack, count, modules = assert_user_line_leads(res, "torch")
    assert {"libc10", "libtorch_cpu"} <= set(modules), stack
    assert count >= 5
    # The whole stack stays available: the record holds the native frames, --native shows them.
    last = [r for r in res.records if r["event"] == "sites"][-1]
    assert last["python_frames_skipped"] is None
    top = last["grown"][0]
    assert top["python"][0] == {"file": str(SCRIPT), "function": "torch_round",
                                "line": KEPT_LINES["torch"]}
    assert any("libc10" in f["module"] for f in top["frames"])
    _, full = top_site(report(res.log_path, "--native"))
    assert full[0] == stack[0]
    assert not any(FOLDED.match(line) for line in full)
    assert any("libc10.so" in line for line in full) and any("libtorch_cpu" in l for l in full)


def test_a_tensor_kept_on_a_thread_of_its_own_names_that_threads_line(run_shim):
    """The work of each round on a thread while the main thread runs Python code: the site
    holds the worker's own frames, never the main thread's."""
    res = run_keep(run_shim, "torch", thread=True)
    stack, _, modules = assert_user_line_leads(res, "torch")
    assert "libtorch_cpu" in modules
    # threading's own frames (Thread.run, _bootstrap) are library code: a site keeps the
    # program's frames only, past its innermost one.
    assert functions(stack)[1:] == ["main.<locals>.<lambda>"], stack


def test_an_array_kept_per_round_is_named_by_the_line_that_keeps_it(run_shim):
    res = run_keep(run_shim, "numpy")
    stack, _, modules = assert_user_line_leads(res, "numpy")
    assert "_multiarray_umath" in modules, stack


@pytest.mark.parametrize("thread", [False, True], ids=["main", "thread"])
@pytest.mark.parametrize("python", PYTHONS)
def test_malloc_called_with_the_gil_released_has_the_callers_frames(run_shim, python, thread):
    """ctypes releases the GIL around a foreign call: malloc runs on a thread that holds it no
    more, its frames still its own."""
    res = run_keep(run_shim, "ctypes", python, thread)
    stack, _, modules = assert_user_line_leads(res, "ctypes")
    assert "_ctypes" in modules or any(m.startswith("libffi") for m in modules), stack
    if thread:
        callers = []  # the thread's own frames below the line are threading's (library code)
    else:
        callers = ["run_round", "main", "<module>"]
    assert functions(stack)[1:] == callers, stack
    # In the records: the 1 MiB blocks are each sampled, so the line holds all six rounds'
    # (in one site or several: the interpreter may reach the call by more than one native path).
    last = [r for r in res.records if r["event"] == "sites"][-1]
    at_line = [s for s in last["live"] if s["python"] and s["python"][0]["line"]
               == KEPT_LINES["ctypes"]]
    held = sum(s["live_bytes"] for s in at_line)
    assert 6 << 20 <= held <= (6 << 20) + 6 * 8192, json.dumps(last["live"])[:3000]
