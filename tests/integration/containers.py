"""The container tests' podman world for one test session (container_host.py makes and holds it):
started as soon as pytest knows that container tests will run, so that the images are made while
the other tests run; waited on by those tests; always ended when the session ends."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import container_host

HERE = Path(__file__).resolve().parent
TESTS_FILE = "test_containers.py"
READY_WAIT_S = 900  # a cold cache on a slow network: the tests skip past it, saying so
TOOLS = ("podman", "runc", "mmdebstrap", "unshare", "nsenter", "mount")


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "roundtrim-tests" / "images"


def cannot_run():
    """Why podman containers cannot run here, or None."""
    if os.geteuid() != 0:
        return "the container tests run podman as root (rootless podman needs subordinate ids)"
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        return (f"{', '.join(missing)} missing (scripts/tools/install-deps installs podman, "
                "runc and mmdebstrap)")
    return None


class Host:
    def __init__(self):
        self.session = Path(tempfile.mkdtemp(prefix="roundtrim-containers-"))
        self.started = time.monotonic()
        self.ready_s = None
        self.log = open(self.session / "host.log", "w")
        self.proc = subprocess.Popen(
            ["nice", "-n", "10", "unshare", "-m", "--propagation", "private", sys.executable,
             str(HERE / "container_host.py"), str(self.session), str(cache_dir())],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def state(self):
        """'ok', or why the tests skip; waits for the images."""
        ready = self.session / "ready"
        deadline = self.started + READY_WAIT_S
        while not ready.exists():
            if self.proc.poll() is not None:
                return f"skip: the container host ended with {self.proc.returncode}: " + \
                    (self.session / "host.log").read_text()[-1500:]
            if time.monotonic() > deadline:
                return f"skip: the images were not made within {READY_WAIT_S} s"
            time.sleep(0.2)
        if self.ready_s is None:
            self.ready_s = time.monotonic() - self.started
        return ready.read_text()

    def podman(self, *args, timeout=120, check=False, **kw):
        """podman ARGS in the host's namespace, with the tests' storage."""
        argv = ["nsenter", "-t", str(self.proc.pid), "-m"] + \
            container_host.podman_argv(self.session) + [str(a) for a in args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              check=check, **kw)

    def in_namespace(self, *argv, timeout=60):
        """A command in the host's namespace (where /etc/cdi is the tests' own)."""
        return subprocess.run(["nsenter", "-t", str(self.proc.pid), "-m"] + [str(a) for a in argv],
                              capture_output=True, text=True, timeout=timeout)

    def end(self):
        """Removes the containers and ends the host; one still making images is ended at once
        with everything it started (its process group: mmdebstrap, apt, podman)."""
        if not (self.session / "ready").exists():
            self.signal_group(signal.SIGTERM)
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=150)
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.log.close()
        # The namespace's mounts went with its last process: what is left are plain files.
        shutil.rmtree(self.session, ignore_errors=True)


    def signal_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


_host = None


def start_if_needed(items):
    """At the end of collection: the container tests run last (the images are made meanwhile)."""
    global _host
    ours = [i for i in items if i.fspath.basename == TESTS_FILE]
    if not ours:
        return
    items[:] = [i for i in items if i.fspath.basename != TESTS_FILE] + ours
    if _host is None and cannot_run() is None:
        _host = Host()


def host():
    """The session's host (started now when collection did not start it), or None."""
    global _host
    if _host is None and cannot_run() is None:
        _host = Host()
    return _host


def end():
    global _host
    if _host is not None:
        _host.end()
        _host = None
