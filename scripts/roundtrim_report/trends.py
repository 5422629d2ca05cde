"""The RSS trend of a process as every form of the report gives it, each with its window: the
least-squares slope of RSS after each round's cleanup over all its rounds, and of RSS before the
cleanup over the rounds its diagnosis covers (what the verdict's growth is fitted on), so that
the two can be read beside the verdict; and the rounds whose cleanup was held back, after which
RSS keeps what the trim or gc would have given back."""

from array import array

from .fields import HELD_BACK_REASONS as HELD_BACK  # the reasons a due trim or gc was held back
from .stats import slope


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool)


def rss_trend(rounds, key, first=None, last=None):
    """(first round, last round, bytes per round) of key over the rounds from first to last (all
    when None), or None with fewer than 2 such rounds."""
    xs, ys = array("Q"), array("d")  # 16 bytes a round: there may be millions
    for x, y in zip(rounds.field("round"), rounds.field(key)):
        if not _whole(x) or not isinstance(y, (int, float)):
            continue
        if (first is not None and x < first) or (last is not None and x > last):
            continue
        xs.append(x)
        ys.append(y)
    per_round = slope(xs, ys)
    if per_round is None:
        return None
    return min(xs), max(xs), per_round


def held_back_rounds(rounds):
    """How many rounds had their trim or gc held back."""
    return sum(r.get("gc_skipped") in HELD_BACK or r.get("trim_skipped") in HELD_BACK
               for r in rounds)


def trends(proc, diagnosis):
    """{"all": (first, last, bytes) of RSS after the cleanup over every round, "window": (first,
    last, bytes) of RSS before the cleanup over the diagnosis's rounds or None, "held_back":
    rounds whose cleanup was held back}."""
    window = None
    first, last = diagnosis.get("first_round"), diagnosis.get("last_round")
    if _whole(first) and _whole(last) and diagnosis.get("cause") is not None:
        window = rss_trend(proc.rounds, "rss_before", first, last)
    return {"all": rss_trend(proc.rounds, "rss_after"), "window": window,
            "held_back": held_back_rounds(proc.rounds)}
