"""What every part of `roundtrim report` shares: its name in messages, memory figures in MiB and
counted words ("1 round", "3 rounds"). A process's trends are in trends.py."""

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
