"""Setting up: scripts/tools/install-deps waits for a package lock that another apt-get holds, and
make check ends with the totals and the skipped tests (scripts/tools/test-totals). Stand-ins for
apt-get, dpkg-query and id on PATH play the system: nothing is installed for real."""

import os
import subprocess
import textwrap

from conftest import ROOT

INSTALL_DEPS = ROOT / "scripts" / "tools" / "install-deps"
TEST_TOTALS = ROOT / "scripts" / "tools" / "test-totals"

LOCK_ERROR = ("E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 "
              "(apt-get)\nE: Unable to lock directory /var/lib/apt/lists/")


def stand_ins(tmp_path, busy_calls):
    """A PATH where nothing is installed, we are root, and apt-get finds the lock held for its
    first busy_calls calls. Returns (env, the file apt-get writes its arguments to)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-calls"
    scripts = {
        "dpkg-query": "exit 1\n",
        "id": "echo 0\n",
        "apt-get": textwrap.dedent(f"""\
            n=$(wc -l < {calls} 2>/dev/null || echo 0)
            echo "$*" >> {calls}
            if [ "$n" -lt {busy_calls} ]; then
                printf '%s\\n' "{LOCK_ERROR}" >&2
                exit 100
            fi
            exit 0
            """),
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", INSTALL_DEPS_LOCK_POLL_S="0")
    return env, calls


def test_install_deps_waits_for_the_package_lock(tmp_path):
    env, calls = stand_ins(tmp_path, busy_calls=3)
    r = subprocess.run([INSTALL_DEPS], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("holds the package lock; waiting for it") == 1, r.stderr
    lines = calls.read_text().splitlines()
    # update refused three times, then done, then the install
    assert [l.split()[-2:] for l in lines[:4]] == [["update", "-qq"]] * 4, lines
    assert "install" in lines[4].split() and "DPkg::Lock::Timeout=300" in lines[4], lines


def test_install_deps_gives_up_after_its_wait_saying_why(tmp_path):
    env, calls = stand_ins(tmp_path, busy_calls=1000)
    env.update(INSTALL_DEPS_LOCK_WAIT_S="3", INSTALL_DEPS_LOCK_POLL_S="1")
    r = subprocess.run([INSTALL_DEPS], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 100, r.stderr
    assert "Could not get lock" in r.stderr
    assert "still held after 3 s; run 'make deps' again later" in r.stderr
    assert len(calls.read_text().splitlines()) == 4


def test_install_deps_does_not_retry_other_failures(tmp_path):
    env, calls = stand_ins(tmp_path, busy_calls=0)
    (tmp_path / "bin" / "apt-get").write_text(
        f"#!/bin/sh\necho \"$*\" >> {calls}\necho 'E: The repository is not signed.' >&2\n"
        "exit 100\n")
    r = subprocess.run([INSTALL_DEPS], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 100
    assert "not signed" in r.stderr and "waiting" not in r.stderr
    assert len(calls.read_text().splitlines()) == 1


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="2" tests="5">
<testcase classname="tests.integration.test_cuda" name="test_real_gpu">
  <skipped type="pytest.skip" message="no CUDA device here">skip</skipped></testcase>
<testcase classname="tests.integration.test_prom" name="test_rules">
  <skipped type="pytest.skip" message="promtool is not installed">skip</skipped></testcase>
<testcase classname="tests.integration.test_core" name="test_counts"/>
<testcase classname="tests.integration.test_core" name="test_bytes"/>
<testcase classname="tests.integration.test_core" name="test_exit"><failure message="x"/></testcase>
</testsuite></testsuites>
"""


def test_check_ends_with_the_totals_and_the_skipped_tests(tmp_path):
    (tmp_path / "unit-results.txt").write_text(
        "Running suite(s): options\n100%: Checks: 55, Failures: 0, Errors: 0\n"
        "Running suite(s): parse\n90%: Checks: 10, Failures: 1, Errors: 0\n")
    (tmp_path / "integration.xml").write_text(JUNIT)
    (tmp_path / "compat-results.txt").write_text(
        "compat: 10 programs same bare and preloaded, 1 differ, 0 missing\n")
    r = subprocess.run([TEST_TOTALS, tmp_path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "== make check: totals",
        "unit suites: 2 suites, 65 checks, 1 failures, 0 errors",
        "compat: 10 programs same bare and preloaded, 1 differ, 0 missing",
        "integration tests: 2 passed, 1 failed, 0 errors, 2 skipped",
        "skipped:",
        "  tests.integration.test_cuda.test_real_gpu: no CUDA device here",
        "  tests.integration.test_prom.test_rules: promtool is not installed",
    ]


def test_totals_say_which_part_did_not_run(tmp_path):
    r = subprocess.run([TEST_TOTALS, tmp_path], capture_output=True, text=True, timeout=60)
    assert "unit suites: did not run" in r.stdout
    assert "integration tests: did not run" in r.stdout
    assert "compat: did not run" in r.stdout
