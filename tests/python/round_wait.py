"""Ends a round through roundtrim's C entry point and waits until its record is in the log
(ROUNDTRIM_LOG), so that each round's cleanup is over before the program goes on. Only the
calling process's records count (a fork child numbers its rounds from 1). With event="sites",
waits for the round's sites record instead (written after its round record)."""

import ctypes
import os
import time

_lib = ctypes.CDLL(None)


def _round_records(event="round"):
    try:
        with open(os.environ["ROUNDTRIM_LOG"]) as f:
            me = '"pid":%d,' % os.getpid()
            kind = '"event":"%s"' % event
            return sum(kind in line and me in line for line in f)
    except (KeyError, FileNotFoundError):
        return 0


def end_round(n, timeout=120, event="round"):
    """Marks round n and waits for its record."""
    _lib.roundtrim_round_end()
    deadline = time.monotonic() + timeout
    while _round_records(event) < n and time.monotonic() < deadline:
        time.sleep(0.02)
