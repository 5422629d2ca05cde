"""The Python frames a sampled allocation carries: the frame reader (runtime/python/frames.c) in a
probe library that each interpreter loads through ctypes, called from known lines of a script
(tests/python/frames_probe.py, lines marked `# frame:NAME`) whose file name is not ASCII."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, shim_env

SCRIPT = Path(__file__).resolve().parents[1] / "python" / "frames_probe.py"
PROBE = BUILD / "tests" / "libpy_frames_probe.so"
PYENV = Path("/root/.pyenv/versions")
# Debian's 3.11 always; the other versions where pyenv has them.
READABLE = [PYTHON] + [str(PYENV / v / "bin" / "python3") for v in ("3.12.1", "3.13.0")]
TOO_OLD = str(PYENV / "3.10.13" / "bin" / "python3")
LINES = {
    m.group(2): n
    for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
    for m in [re.search(r"(#) frame:(\w+)", line)]
    if m
}


def probe(python, tmp_path):
    if python != PYTHON and not os.access(python, os.X_OK):
        pytest.skip(f"{python} is not installed")
    if not PROBE.exists():
        pytest.fail(f"{PROBE} is missing: run the tests through 'make check'")
    script = tmp_path / "clïent_模型.py"
    shutil.copy(SCRIPT, script)
    res = subprocess.run(
        [python, str(script), str(PROBE)],
        env=shim_env(preload=False),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    return json.loads(res.stdout), str(script)


def triples(stack, count=None):
    return [(f["file"], f["function"], f["line"]) for f in stack["frames"][:count]]


def cut(text, size):
    """What fits in `size` bytes with the NUL, cut at a character boundary."""
    out = ""
    for ch in text:
        if len((out + ch).encode()) > size - 1:
            break
        out += ch
    return out


def client_frames(file, caller, caller_line):
    """The innermost frames of a stack read through Client.run_round, called by `caller` at
    the line marked `caller_line`."""
    return [
        (file, "stack", LINES["stack"]),
        (file, "Client.receive_model", LINES["receive_model"]),
        (file, "Client.run_round", LINES["run_round"]),
        (file, caller, LINES[caller_line]),
    ]


@pytest.mark.parametrize("python", READABLE)
def test_innermost_frames_name_file_qualified_function_and_line(python, tmp_path):
    out, file = probe(python, tmp_path)
    assert out["unavailable"] == ""
    assert out["held"]["n"] == 5
    assert triples(out["held"]) == client_frames(file, "main", "main") + [
        (file, "<module>", LINES["module"])
    ]
    gen = out["generator"]
    assert triples(gen, 2) == [(file, "stack", LINES["stack"]), (file, "produce", LINES["generator"])]
    assert gen["frames"][2]["function"] == "main"


@pytest.mark.parametrize("python", READABLE)
def test_a_thread_reads_its_own_frames_with_the_gil_or_without(python, tmp_path):
    out, file = probe(python, tmp_path)
    # The call through ctypes.CDLL releases the GIL: the thread holds it no more, and its
    # frames are still its own.
    assert triples(out["released"]) == client_frames(file, "main", "released") + [
        (file, "<module>", LINES["module"])
    ]
    # A thread Python never saw, while the main thread holds the GIL.
    assert out["native_thread"] == 0
    # A second Python thread reads its own stack, down to threading's frames, whether it holds
    # the GIL or released it while the main thread runs Python code: never the frames of the
    # thread holding the GIL.
    for key in ("thread", "thread_released"):
        stack = out[key]
        assert triples(stack, 4) == client_frames(file, "main.<locals>.<lambda>", key)
        assert stack["frames"][4:]
        assert all(f["file"].endswith("threading.py") for f in stack["frames"][4:])


@pytest.mark.parametrize("python", READABLE)
def test_non_ascii_names_come_out_as_utf8(python, tmp_path):
    out, file = probe(python, tmp_path)
    assert "ï" in file and "模" in file
    for key, name in (
        ("latin1", "modèle_reçu"),  # one byte per character
        ("ucs2", "模型"),  # two
        ("ucs4", "𐀀"),  # four
        ("cached", "cached_模型"),  # CPython already holds its UTF-8 form
    ):
        assert triples(out[key], 2) == [(file, "stack", LINES["stack"]), (file, name, LINES[key])]
    assert out["cached_utf8"] == 1
    # Names cut to fit a small buffer end on a whole character.
    assert out["cut_ucs2"]["frames"][1]["function"] == cut("模型", 6) == "模"
    assert out["cut_cached"]["frames"][1]["function"] == cut("cached_模型", 9) == "cached_"
    assert out["cut_ucs2"]["frames"][0]["file"] == cut(file, 6)


def test_interpreter_before_311_reads_nothing_and_says_why(tmp_path):
    out, _ = probe(TOO_OLD, tmp_path)
    assert out["unavailable"] == "python_version"
    assert out["held"] == {"n": 0, "frames": []}


@pytest.mark.parametrize("python", READABLE)
def test_frames_read_inside_every_malloc_of_five_threads(python, tmp_path):
    """As the sampler reads them: inside malloc, at every call, while frames are being set up,
    threads start and end, coroutines and generators switch, and the interpreter finalizes
    while a daemon thread keeps calling malloc with the GIL released."""
    if python != PYTHON and not os.access(python, os.X_OK):
        pytest.skip(f"{python} is not installed")
    lib = BUILD / "tests" / "libpy_frames_malloc.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: run the tests through 'make check'")
    env = shim_env(preload=False)
    env["LD_PRELOAD"] = str(lib)
    res = subprocess.run(
        [python, str(SCRIPT.with_name("frames_malloc_workload.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    out = json.loads(res.stdout)
    assert out["unavailable"] == ""
    assert out["samples"] > 10000
    assert out["with_frames"] > 10000
    assert out["frames"] > 5 * out["with_frames"]
    assert out["unnamed"] == 0
    assert out["bad_line"] == 0
    assert out["marked"] > 1000  # mallocs made under churn() name it
    # 100 mallocs with the GIL released: each read its caller's frames.
    assert out["released_without_frames"] == 0
    assert out["released_marked"] >= 100
