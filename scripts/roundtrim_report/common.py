"""What every part of `roundtrim report` shares: its name in messages, memory figures in MiB,
counted words ("1 round", "3 rounds") and a process's trend per round, which the table, the
plot's panel titles and --json all give."""

from array import array

from .stats import slope

PROG = "roundtrim report"
MIB = 1024.0 * 1024.0

def plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def mib(value):
    if not isinstance(value, (int, float)):
        return ""
    return f"{value / MIB:.1f}"


def mib_or_none(value):
    return value / MIB if isinstance(value, (int, float)) else None



def trend_per_round(rounds, key):
    """Least-squares slope of key (MiB) over round numbers; None with fewer than 2 points."""
    xs, ys = array("Q"), array("d")  # 16 bytes a round: there may be millions
    for x, y in zip(rounds.field("round"), rounds.field(key)):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            xs.append(x)
            ys.append(y / MIB)
    return slope(xs, ys)
