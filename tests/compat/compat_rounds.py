"""Rounds for the compatibility programs: each does its work in a few rounds and ends each with
roundtrim_round_end() when roundtrim is preloaded (its cleanup then runs between the library's
own calls), and with nothing when it is not."""

import ctypes


def round_end():
    end = getattr(ctypes.CDLL(None), "roundtrim_round_end", None)
    if end is not None:
        end()


def rounds(n, work):
    """Runs work(i) for i in 0..n-1, a round end after each; returns their results."""
    out = []
    for i in range(n):
        out.append(work(i))
        round_end()
    return out
