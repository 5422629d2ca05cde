"""Shared helpers for the integration tests: they preload the built library into real programs
and read what it wrote (the round log, stderr), exactly as a user would."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BUILD", ROOT / "build"))
if not BUILD.is_absolute():
    BUILD = ROOT / BUILD
# make debug runs some of the tests with the library of its debug build (mk/debug.mk).
LIB = Path(os.environ.get("ROUNDTRIM_TEST_LIB") or BUILD / "libroundtrim.so")
PYTHON = "/usr/bin/python3"  # Debian's interpreter: python3-torch serves this one

# The report's package (scripts/roundtrim_report) and the benchmark driver (bench/bench.py), for
# the tests that check what they compute: `from roundtrim_report import sites`, `import bench_sites`.
for _folder in (ROOT / "scripts", ROOT / "bench"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


def prog(name):
    """Path of a test program built from tests/programs/<name>.c."""
    path = BUILD / "tests" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run the tests through 'make check'")
    return str(path)


def safe_host_name(name=None):
    """The host name as the library writes it for %h and in the hostname label: letters,
    digits, '-', '_' and '.' kept, anything else and a leading '.' as '_' (this machine's by
    default)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname() if name is None else name)
    name = "_" + name[1:] if name.startswith(".") else name
    return name or "_"


def read_records(path):
    """Parsed JSON lines of a round log (a missing file gives no records)."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            records.append(json.loads(line))
    return records


def rounds(records):
    return [r for r in records if r.get("event") == "round"]


class Result:
    def __init__(self, proc, log_path):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.log_path = log_path
        self.records = read_records(log_path) if log_path else []

    @property
    def rounds(self):
        return rounds(self.records)

    def stdout_json(self):
        return [json.loads(l) for l in self.stdout.splitlines() if l.startswith("{")]


def shim_env(extra=None, preload=True, log_path=None):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("ROUNDTRIM_") or key.startswith("NVFLARE_") or key in (
            "LD_PRELOAD",
            "MALLOC_ARENA_MAX",
            "GLIBC_TUNABLES",
        ):
            del env[key]
    if preload:
        env["LD_PRELOAD"] = str(LIB)
    if log_path:
        env["ROUNDTRIM_LOG"] = str(log_path)
    env.update(extra or {})
    return env


@pytest.fixture
def run_shim(tmp_path):
    """run_shim(argv, env=None, log=True, preload=True, timeout=60, input=None) -> Result.

    The round log goes to a file of the test's own; ROUNDTRIM_/NVFLARE_ variables of the caller's
    environment are dropped so that every test states its settings."""
    counter = [0]

    def run(argv, env=None, log=True, preload=True, timeout=60, input=None, cwd=None):
        counter[0] += 1
        log_path = tmp_path / f"log{counter[0]}.jsonl" if log else None
        proc = subprocess.run(
            [str(a) for a in argv],
            env=shim_env(env, preload, log_path),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
            cwd=cwd,
        )
        return Result(proc, log_path)

    return run


def wait_for(predicate, timeout=10.0, interval=0.02):
    """Polls until predicate() is true; returns its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value


@pytest.fixture
def spawn(tmp_path):
    """spawn(argv, env=None, preload=True) -> (Popen, log_path); every process is ended after."""
    procs = []

    def start(argv, env=None, preload=True, log=True, **kw):
        log_path = tmp_path / f"spawn{len(procs)}.jsonl" if log else None
        p = subprocess.Popen(
            [str(a) for a in argv],
            env=shim_env(env, preload, log_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )
        procs.append(p)
        return p, log_path

    yield start
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()


# ---- the container tests' images -------------------------------------------------------------
# test_containers.py runs last; the images it needs are made in the background from the end of
# collection on (tests/integration/containers.py), and whatever was started ends with the session.


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(session, config, items):
    import containers

    if not config.option.collectonly:
        containers.start_if_needed(items)


def pytest_sessionfinish(session, exitstatus):
    import containers

    containers.end()
