"""The least-squares line of roundtrim's tools: the RSS trend per round of `roundtrim report`,
the growth of an allocation site of `roundtrim report --sites` (sites.py) and the
slope of the benchmarks (bench/bench.py)."""

import math


def centred(xs, ys):
    """(n, mean of xs, mean of ys, sum of squared deviations of xs) of two sequences of the same
    length (lists or arrays: each is read more than once)."""
    n = len(xs)
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return n, mx, my, sxx


def slope(xs, ys):
    """The least-squares slope of ys over xs; None with fewer than 2 points or when every x is
    the same."""
    if len(xs) < 2:
        return None
    _, mx, my, sxx = centred(xs, ys)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def slope_error(xs, ys, fitted):
    """The standard error of fitted, the least-squares slope of ys over xs; NaN with 2 points
    (a line through 2 points has no residual to measure)."""
    n, mx, my, sxx = centred(xs, ys)
    resid = [y - (my + fitted * (x - mx)) for x, y in zip(xs, ys)]
    return math.sqrt(sum(r * r for r in resid) / (n - 2) / sxx) if n > 2 else float("nan")
