"""The text report of `roundtrim report`: per process a line that says what it is, its diagnosis,
a table of its rounds and memory-pressure events in time order (RSS before and after the
cleanup, peak, live heap, cgroup and device memory, the cleanup's actions and time, the steps
left out and why), a legend of the table's words, and a summary (what the cleanups gave back,
the RSS trend, the exit and the Python round hooks). With --pid and --round: the header and the
row of one round."""

import heapq
import time

from . import diagnosis as roundtrim_diagnosis
from .common import MIB, mib, plural
from .fields import PRESSURE_CLEAN, PRESSURE_WARN, SKIP_REASONS, STEP_SKIPS
from .trends import rss_trend, trends

def rel_time(record, t0):
    ts = record.get("ts")
    if not isinstance(ts, (int, float)) or t0 is None:
        return ""
    return f"{ts - t0:.1f}"


def pressure_text(p):
    level = p.get("level", "?")
    percent = p.get("percent")
    pct = f"{percent:.1f}%" if isinstance(percent, (int, float)) else "?%"
    limit = p.get("limit_bytes")
    where = p.get("limit_source")
    text = f"pressure {level}: {pct} of {mib(limit) or '?'} MiB"
    return text + (f" ({where})" if where else "")



def table_columns(proc):
    """(header, width, function of a round record) for each column this process has data for."""
    cols = [
        ("round", 5, lambda r: str(r.get("round", ""))),
        ("time s", 8, None),
        ("source", 8, lambda r: str(r.get("source", ""))),
        ("RSS before", 10, lambda r: mib(r.get("rss_before"))),
        ("RSS after", 9, lambda r: mib(r.get("rss_after"))),
        ("freed", 7, lambda r: freed(r)),
        ("peak", 8, lambda r: mib(r.get("rss_peak"))),
        ("heap live", 9, lambda r: mib(r.get("heap_live")) or "-"),
    ]
    if proc.has("cgroup_usage"):
        cols.append(("cgroup", 8, lambda r: mib(r.get("cgroup_usage"))))
    if proc.has("device_held"):
        cols.append(("device", 8, lambda r: mib(r.get("device_held"))))
    cols.append(("cleanup ms", 10, lambda r: cleanup_ms(r)))
    cols.append(("actions / events", 0, actions_text))
    return cols


# What each reason a step was left out means: the legend under a table names those it shows.
SKIP_MEANINGS = SKIP_REASONS
REASON_UNKNOWN = "see the round log's reference (docs/reference/round-log.md)"
FREED_MEANING = ("freed: RSS before the cleanup minus RSS after it; the program runs on meanwhile, "
                 "so a negative figure means it allocated more during the cleanup than the "
                 "cleanup gave back, not that the cleanup took memory")


def skip_legend(proc):
    """A line for each reason of a skipped step the table shows, in the order first shown."""
    seen = []
    for r in proc.rounds:
        for _, key in STEP_SKIPS:
            why = r.get(key)
            if isinstance(why, str) and why not in seen:
                seen.append(why)
    return [f"  {why}: {SKIP_MEANINGS.get(why, REASON_UNKNOWN)}"
            for why in seen]


def actions_text(r):
    """The actions that ran, then the steps left out and why (the cleanup policy's reasons)."""
    parts = [",".join(r.get("cleanup") or [])]
    skipped = [f"{step} {r[key]}" for step, key in STEP_SKIPS if isinstance(r.get(key), str)]
    if skipped:
        parts.append("skipped: " + ", ".join(skipped))
    if r.get("trim_steps"):
        parts.append(f"{r['trim_steps']} trim steps")
    return "; ".join(p for p in parts if p) or "-"


def freed(r):
    before, after = r.get("rss_before"), r.get("rss_after")
    if not r.get("cleanup"):
        return "-"
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)):
        return ""
    return f"{(before - after) / MIB:.1f}"


def cleanup_ms(r):
    us = r.get("cleanup_us")
    if not r.get("cleanup") or not isinstance(us, (int, float)):
        return "-"
    return f"{us / 1000.0:.1f}"


def format_row(cols, cells):
    parts = []
    for (header, width, _), cell in zip(cols, cells):
        if width == 0:
            parts.append(cell)
        elif header in ("source",):
            parts.append(cell.ljust(width))
        else:
            parts.append(cell.rjust(width))
    return "  ".join(parts).rstrip()


def describe(proc):
    bits = [f"process {proc.pid}"]
    if proc.role:
        bits.append(f"role {proc.role}")
    if proc.exe:
        bits.append(str(proc.exe))
    allocator = (proc.start or {}).get("allocator") or proc.allocator
    if allocator:
        bits.append(f"allocator {allocator}")
    ts = (proc.start or {}).get("ts")
    if isinstance(ts, (int, float)):
        try:
            bits.append("started " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)))
        except (OverflowError, OSError, ValueError):  # past what the C library can date
            bits.append(f"started at {ts:.0f} s after 1970 (no date)")
    return ", ".join(bits)


def round_cells(t0, cols, rec):
    return [rel_time(rec, t0) if fn is None else fn(rec) for _, _, fn in cols]


def print_round_row(proc, number, out):
    """The header and the row of one round (what `roundtrim round --wait` shows); False when the
    process has no such round."""
    found = None
    for i, n in enumerate(proc.rounds.field("round")):
        if n == number:
            found = i
    if found is None:
        return False
    cols = table_columns(proc)
    print(format_row(cols, [h for h, _, _ in cols]), file=out)
    print(format_row(cols, round_cells(proc.first_ts(), cols, proc.rounds[found])), file=out)
    return True


def time_key(ts):
    return ts if isinstance(ts, (int, float)) else 0


def timeline(proc):
    """The process's rounds and pressure events in time order (a record without a time first,
    a round before a pressure event of the same time, else in the log's order), as (0, round)
    or (1, pressure event)."""
    order = range(len(proc.rounds))
    if not in_order(map(time_key, proc.rounds.field("ts"))):
        # A clock set back: the exception, rounds are written in time order.
        keys = [time_key(ts) for ts in proc.rounds.field("ts")]
        order = sorted(order, key=keys.__getitem__)

    def rounds():
        for i in order:
            rec = proc.rounds[i]
            yield time_key(rec.get("ts")), 0, i, rec

    pressure = sorted((time_key(p.get("ts")), 1, i, p) for i, p in enumerate(proc.pressure))
    for _, kind, _, rec in heapq.merge(rounds(), pressure):
        yield kind, rec


def in_order(keys):
    previous = None
    for key in keys:
        if previous is not None and key < previous:
            return False
        previous = key
    return True


def print_table(proc, out, resolver):
    print(describe(proc), file=out)
    diagnosis = roundtrim_diagnosis.diagnosis_of(proc, resolver)
    for line in roundtrim_diagnosis.text_lines(diagnosis):
        print(line, file=out)
    if not proc.rounds and not proc.pressure:
        print("  no rounds recorded", file=out)
    else:
        t0 = proc.first_ts()
        cols = table_columns(proc)
        print(format_row(cols, [h for h, _, _ in cols]), file=out)
        for kind, rec in timeline(proc):
            if kind == 0:
                cells = round_cells(t0, cols, rec)
            else:
                cells = [""] * len(cols)
                cells[1] = rel_time(rec, t0)
                cells[-1] = pressure_text(rec)
            print(format_row(cols, cells), file=out)
        print("  memory in MiB; time in seconds since the process's first record", file=out)
        print("  " + FREED_MEANING, file=out)
        legend = skip_legend(proc)
        if legend:
            print("  skipped steps (actions column):", file=out)
            for line in legend:
                print("  " + line, file=out)
    print_summary(proc, out, diagnosis)
    print(file=out)


def trend_lines(proc, diagnosis):
    """The RSS trend over all the rounds, and over the diagnosis's rounds on what its verdict
    measures, each with its window; where cleanup was held back, why RSS after it rises."""
    t = trends(proc, diagnosis)
    if t["all"] is None:
        return []
    first, last, per = t["all"]
    lines = [f"  RSS trend: {per / MIB:+.2f} MiB per round over rounds {first}-{last} (RSS after "
             "each round's cleanup, all rounds)"]
    if t["window"] is not None:
        first, last, per = t["window"]
        lines.append(f"  RSS before the cleanup over rounds {first}-{last}, the diagnosis's (what "
                     f"its verdict measures): {per / MIB:+.2f} MiB per round")
    if t["held_back"]:
        lines.append(f"  cleanup was held back in {plural(t['held_back'], 'round')} (budget or "
                     "pause limit): RSS after such a round keeps what the trim or gc would have "
                     "given back")
    return lines


def print_summary(proc, out, diagnosis):
    rounds = proc.rounds
    if rounds:
        cleanups, given_back, device_back, peak = 0, 0, 0, None
        for r in rounds:
            if r.get("cleanup"):
                cleanups += 1
                given_back += max(0, (r.get("rss_before") or 0) - (r.get("rss_after") or 0))
                device_back += sum(r.get(k) or 0
                                   for k in roundtrim_diagnosis.RECOVERED_FIELDS["device"])
            if isinstance(r.get("rss_peak"), (int, float)) and (peak is None
                                                                 or r["rss_peak"] > peak):
                peak = r["rss_peak"]
        first, last = rounds[0].get("rss_after"), rounds[-1].get("rss_after")
        back = f"{given_back / MIB:.1f} MiB"
        if proc.has("device_held"):
            back += f" of RSS and {device_back / MIB:.1f} MiB of device memory"
        line = (f"  {plural(len(rounds), 'round')}, {plural(cleanups, 'cleanup')} giving back "
                f"{back}; RSS after the round: first {mib(first)} MiB, last {mib(last)} MiB")
        if peak is not None:
            line += f", highest peak {mib(peak)} MiB"
        print(line, file=out)
        for line in trend_lines(proc, diagnosis):
            print(line, file=out)
        device = rss_trend(rounds, "device_held") if proc.has("device_held") else None
        if device is not None:
            first, last, per = device
            print(f"  device memory trend: {per / MIB:+.2f} MiB per round over rounds "
                  f"{first}-{last}", file=out)
    if proc.pressure:
        levels = [p.get("level", "?") for p in proc.pressure]
        print(f"  memory pressure events: {levels.count(PRESSURE_WARN)} above the warning line, "
              f"{levels.count(PRESSURE_CLEAN)} above the cleanup line", file=out)
    if proc.exit:
        e = proc.exit
        how = "replaced itself with exec" if e.get("event") == "exec" else "exited"
        print(f"  {how} after {plural(e.get('rounds', '?'), 'round')} and "
              f"{plural(e.get('cleanups', '?'), 'cleanup')}, RSS {mib(e.get('rss')) or '?'} MiB",
              file=out)
        print_hooks(e, out)
    else:
        print("  no exit record: the process is still running, or was killed", file=out)
    if proc.sites.count:
        print(f"  {plural(proc.sites.count, 'sites record')} of sampled allocation sites: "
              "'roundtrim report --sites' shows the sites that grow", file=out)


HOOK_LISTS = (
    ("hooks_attached", "hooks attached"),
    ("hooks_missing", "hooks missing (imported, name not found)"),
    ("hooks_not_imported", "hooks not imported"),
)


def print_hooks(exit_record, out):
    """The Python round hooks of the process: those that attached, and those that never did."""
    for key, title in HOOK_LISTS:
        names = exit_record.get(key)
        if names:
            print(f"  {title}: {', '.join(names)}", file=out)
