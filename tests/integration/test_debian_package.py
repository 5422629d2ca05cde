"""The Debian package, as an operator meets it: `make deb` builds it with debhelper, `dpkg -i`
installs it on this machine, the installed `roundtrim run` preloads the installed library into a
program that ends rounds and the round log says so, the manual pages are found and render, and
`dpkg --purge` removes every file the package installed.

It needs root (dpkg) and debhelper; it skips, saying which, without them. Where a roundtrim
package is installed already, it skips too: it leaves the machine's packages as it found them.
The package it installs is removed at the end, also when a step fails.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PYTHON, shim_env

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "roundtrim"
ROUNDS = 3


def missing_prerequisite():
    """Why this machine cannot build and install the package, or None."""
    if os.geteuid() != 0:
        return "installs a package with dpkg: run as root"
    needs = {"dpkg-buildpackage": "dpkg-dev", "dh": "debhelper", "dpkg": "dpkg",
             "man": "man-db", "make": "make"}
    absent = sorted({pkg for tool, pkg in needs.items() if not shutil.which(tool)})
    if absent:
        return f"needs {', '.join(absent)} (apt-get install {' '.join(absent)})"
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    if arch not in ("amd64", "arm64"):
        return f"the package is built for amd64 and arm64 only, not {arch}"
    if is_installed():
        return ("a roundtrim package is installed on this machine: the test would replace and "
                "remove it, and it leaves the machine's packages as it found them")
    preload = Path("/etc/ld.so.preload")
    if preload.exists() and "libroundtrim" in preload.read_text(errors="replace"):
        return ("/etc/ld.so.preload preloads libroundtrim.so: removing the package would leave "
                "every process on this machine warning about it")
    return None


def run(argv, timeout=60, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, **kw)


def dpkg_change(*args):
    """dpkg -i, -r or --purge, waiting (two minutes at most) while another package tool holds
    dpkg's lock (an apt run, another test run of this machine) instead of failing on it."""
    deadline = time.monotonic() + 120
    while True:
        r = run(["dpkg", *args], timeout=120)
        if r.returncode == 0 or "lock" not in r.stderr or time.monotonic() > deadline:
            return r
        time.sleep(1)


def user_env(**extra):
    """A plain environment: no roundtrim variables, no LD_PRELOAD, no make variables, the
    system's PATH (the installed command is found there, not in the source tree)."""
    env = shim_env(preload=False)
    for key in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MALLOC_CONF"):
        env.pop(key, None)
    env.update(PATH="/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL="C.UTF-8", **extra)
    return env


def is_installed():
    status = run(["dpkg-query", "-W", "-f=${Status}", PACKAGE]).stdout
    return status.endswith(" installed") or "config-files" in status


def purge():
    if is_installed():
        dpkg_change("--purge", PACKAGE)


def build_package(build_dir):
    made = run(["make", "-s", "--no-print-directory", "deb", f"BUILD={build_dir}"], cwd=REPO,
               env=user_env(), timeout=600)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    debs = [p for p in (build_dir / "deb").glob(f"{PACKAGE}_*.deb")]
    assert len(debs) == 1, f"expected one {PACKAGE}_*.deb in {build_dir / 'deb'}: {debs}"
    return debs[0]


def report_modules():
    """The installed paths of every module of the report's package: the report imports them
    all, so one left out of the package breaks `roundtrim report`."""
    return [f"/usr/libexec/roundtrim/roundtrim_report/{module.name}"
            for module in sorted((REPO / "scripts" / "roundtrim_report").glob("*.py"))]


def check_installed_layout(files, triplet):
    for path in (f"/usr/lib/{triplet}/libroundtrim.so", "/usr/include/roundtrim.h",
                 "/usr/bin/roundtrim", "/usr/libexec/roundtrim/roundtrim-options",
                 "/usr/libexec/roundtrim/roundtrim-diagnose",
                 "/usr/share/man/man1/roundtrim.1.gz",
                 "/usr/share/man/man7/roundtrim-variables.7.gz",
                 "/usr/share/doc/roundtrim/examples/Dockerfile",
                 "/usr/share/doc/roundtrim/examples/entrypoint.sh",
                 "/usr/share/doc/roundtrim/copyright", *report_modules()):
        assert path in files, f"{path} is not in the package"
        assert Path(path).is_file(), f"{path} is listed by dpkg but not on disk"


def check_rounds_recorded(tmp_path, lib):
    """The installed command preloads the installed library into a Python program that ends
    rounds through the C call; the round log has them, and the installed report reads it."""
    log = tmp_path / "rt-%p.jsonl"
    program = ("import ctypes\n"
               "lib = ctypes.CDLL(None)\n"
               f"for _ in range({ROUNDS}):\n"
               "    lib.roundtrim_round_end()\n")
    r = run(["/usr/bin/roundtrim", "run", "--log", log, "--", PYTHON, "-c", program],
            env=user_env(), cwd="/")
    assert r.returncode == 0, r.stderr
    logs = list(tmp_path.glob("rt-*.jsonl"))
    assert len(logs) == 1, f"expected one round log, got {logs}"
    records = [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]
    events = [rec["event"] for rec in records]
    assert events[0] == "start" and events[-1] == "exit", events
    rounds = [rec for rec in records if rec["event"] == "round"]
    assert [rec["round"] for rec in rounds] == list(range(1, ROUNDS + 1))
    assert all(rec["source"] == "call" for rec in rounds)
    assert records[-1]["rounds"] == ROUNDS
    pid = records[0]["pid"]

    maps = run(["/usr/bin/roundtrim", "run", "--", "cat", "/proc/self/maps"], env=user_env())
    assert maps.returncode == 0, maps.stderr
    assert lib in maps.stdout, f"{lib} is not what the installed command preloads"

    report = run(["/usr/bin/roundtrim", "report", logs[0]], env=user_env())
    assert report.returncode == 0, report.stderr
    assert f"process {pid}" in report.stdout
    # run by root, the report leaves nothing beside its modules that the package would not own
    assert not list(Path("/usr/libexec/roundtrim").rglob("__pycache__"))

    env = run(["/usr/bin/roundtrim", "env", "--format", "docker"], env=user_env())
    assert env.returncode == 0, env.stderr
    assert f'ENV LD_PRELOAD="{lib}"' in env.stdout


def check_manual_pages():
    """Both pages are found by man, render without a warning, and the variables page lists every
    variable of the installed option table."""
    pages = {}
    for section, name in (("1", "roundtrim"), ("7", "roundtrim-variables")):
        found = run(["man", "-w", section, name], env=user_env())
        assert found.returncode == 0, found.stderr
        path = found.stdout.strip()
        assert path == f"/usr/share/man/man{section}/{name}.{section}.gz"
        shown = run(["man", "--warnings", "-l", path], env=user_env(MANWIDTH="80"))
        assert shown.returncode == 0 and shown.stderr == "", shown.stderr
        pages[name] = shown.stdout
    assert "roundtrim run" in pages["roundtrim"] and "roundtrim report" in pages["roundtrim"]
    table = run(["/usr/libexec/roundtrim/roundtrim-options", "--format", "tsv"]).stdout
    names = [line.split("\t")[0] for line in table.splitlines()[1:]]
    assert names, "the installed option table is empty"
    missing = [n for n in names if n not in pages["roundtrim-variables"]]
    assert not missing, f"roundtrim-variables(7) lacks {missing}"


def test_package_builds_installs_runs_and_removes_cleanly(tmp_path):
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    deb = build_package(tmp_path / "build")
    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    triplet = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    lib = f"/usr/lib/{triplet}/libroundtrim.so"
    files = []
    try:
        installed = dpkg_change("-i", deb)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        files = run(["dpkg", "-L", PACKAGE]).stdout.splitlines()
        check_installed_layout(files, triplet)
        assert "libroundtrim.so" in run(["ldconfig", "-p"]).stdout  # the ldconfig trigger ran

        shown = run(["/usr/bin/roundtrim", "--version"], env=user_env())
        assert shown.stdout.strip() == f"roundtrim {version}", "debian/changelog and the command " \
            "disagree on the version"
        check_rounds_recorded(tmp_path, lib)
        check_manual_pages()

        removed = dpkg_change("-r", PACKAGE)
        assert removed.returncode == 0, removed.stdout + removed.stderr
        purged = dpkg_change("--purge", PACKAGE)
        assert purged.returncode == 0, purged.stdout + purged.stderr
    finally:
        purge()
    assert not is_installed()
    left = [f for f in files if os.path.lexists(f) and not os.path.isdir(f)]
    assert not left, f"left behind after dpkg --purge: {left}"
    for folder in ("/usr/libexec/roundtrim", "/usr/share/doc/roundtrim"):
        assert not os.path.lexists(folder), f"{folder} is left behind"
    assert "libroundtrim.so" not in run(["ldconfig", "-p"]).stdout
