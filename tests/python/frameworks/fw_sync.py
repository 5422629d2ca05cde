"""Waits until this process has n round records in ROUNDTRIM_LOG (a log shared by processes)."""

import os
import time


def own_rounds(pid=None):
    try:
        with open(os.environ["ROUNDTRIM_LOG"]) as f:
            me = '"pid":%d,' % (pid or os.getpid())
            return sum('"event":"round"' in line and me in line for line in f)
    except (KeyError, FileNotFoundError):
        return 0


def wait_rounds(n, timeout=20, pid=None):
    """Returns once n round records of this process (or of pid) are in the log, or after timeout
    seconds (the test then sees the missing records)."""
    deadline = time.monotonic() + timeout
    while own_rounds(pid) < n and time.monotonic() < deadline:
        time.sleep(0.02)
