"""The diagnosis part of `roundtrim report`: why each process's memory grows, in words and as
JSON (--json).

The process diagnoses itself (libroundtrim.so writes a "diagnosis" record every
ROUNDTRIM_DIAG_ROUNDS rounds and at exit, from the breakdown of its memory in each round
record); the report shows the latest one. A process that wrote none, or whose rounds went on after
its last one and that ended without an exit record (a worker ended by SIGTERM), gets the verdict
of the same code over its round records: roundtrim-diagnose, built from the library's
policy/diagnosis.c, is given their figures. The report shows it with the allocation sites that grow when the cause is
a leak and sites were sampled (ROUNDTRIM_SITES=true). A log written before round records had a
memory breakdown gets no guess: the report says what it cannot tell.
"""

import collections
import json
import os
import re
import subprocess
from pathlib import Path

from . import sites as roundtrim_sites
from .fields import (DIAG_ACTIONS, DIAG_CAUSES, DIAG_CONTEXT, DIAG_HISTORY, DIAG_INPUT,
                     DIAG_MIN_ROUNDS, DIAG_PARTS, DIAG_REASONS, HEADROOM_OF, MEM_PARTS,
                     OPTION_DEFAULTS)

MIB = 1024.0 * 1024.0
# Where a sample line holds the mask of the parts measured, and the Python part's bit in it.
PARTS_MASK_FIELD = 1 + [kind for _, kind, _ in DIAG_INPUT].index("PARTS")
PYTHON_BIT = 1 << DIAG_PARTS.index("python")
# The option that asks for allocation sites: the context's sites fields depend on it.
SITES_OPTION = "ROUNDTRIM_SITES"
# The settings the context line reads (roundlog keeps them of each start record).
CONTEXT_SETTINGS = tuple(source for _, _, source in DIAG_CONTEXT
                         if source.startswith("ROUNDTRIM_")) + (SITES_OPTION,)
MAX_SITES = 3
# The words of the library's tables the report acts on (HEADROOM_OF, SITES_SAID).
CGROUP = "cgroup"
SITES_SAMPLED = "sampled"

CAUSE_WORDS = DIAG_CAUSES  # how the report names each cause (policy/diag_causes.def)

REASON = re.compile(r"[a-z_]{1,23}")
HERE = Path(__file__).resolve().parent
# Installed: beside the package, in the command's libexec folder; in the source tree: build/.
DIAGNOSE = (HERE.parent / "roundtrim-diagnose", HERE.parents[1] / "build" / "roundtrim-diagnose")

PART_WORDS = {part: words for part, _, words in MEM_PARTS}


# A diagnosis record's envelope: every other key it has the report keeps (--json gives them as
# they are), whatever the library writes.
ENVELOPE = ("event", "pid", "ts")


class Kept:
    """What the report keeps for the diagnosis of one process."""

    __slots__ = ("latest", "with_breakdown", "without_breakdown", "samples", "last_round",
                 "sites_lines", "holders")

    def __init__(self):
        self.latest = None  # the last diagnosis record
        self.with_breakdown = 0  # rounds whose record has a memory breakdown
        self.without_breakdown = 0
        # roundtrim-diagnose's sample lines (made with the first: a process of a round or two
        # among hundreds of thousands need not carry an empty window)
        self.samples = ()
        self.last_round = None
        # The last sites records as their lines (one can be 512 KiB; parsed, several times
        # that): parsed only for a process whose cause is a leak.
        self.sites_lines = {}
        self.holders = None  # the last holders record: what keeps a growing process's memory

    def add_round(self, record):
        if "memory" in record:
            self.with_breakdown += 1
        else:
            self.without_breakdown += 1
        if _whole(record.get("round")):
            self.last_round = record["round"]
        line = sample_line(record)
        if line:
            if not self.samples:
                self.samples = collections.deque(maxlen=DIAG_HISTORY)
            self.samples.append(line)

    def add_diagnosis(self, record):
        self.latest = {k: v for k, v in record.items() if k not in ENVELOPE}

    def add_holders(self, record):
        found = record.get("holders")
        if isinstance(found, list):
            self.holders = {"round": record.get("round"), "objects": record.get("objects"),
                            "gil_us": record.get("gil_us"),
                            "holders": [h for h in found if isinstance(h, dict)
                                        and isinstance(h.get("path"), str)]}

    def add_sites_line(self, rnd, line):
        if not isinstance(rnd, int) or isinstance(rnd, bool):
            return
        self.sites_lines[rnd] = line
        if len(self.sites_lines) > roundtrim_sites.DEFAULT_LAST:
            del self.sites_lines[min(self.sites_lines)]

    def sites_records(self):
        kept = roundtrim_sites.Kept()
        for rnd in sorted(self.sites_lines):
            kept.add(json.loads(self.sites_lines[rnd]))
        return kept.records()


# What the report says instead of the advice's sentence on sampled sites (the record's
# advice_sites) when none of the sampled sites grows, and when too few sites records are there
# yet to tell (sampling started late, or the process ended soon after).
SITES_NONE = ("No sampled site grows over the last rounds with sites records: the growth is in "
              "allocations too small or too rare for the sampling interval to catch so far "
              "(ROUNDTRIM_SITES_SAMPLE sets it), or outside the heap's counters.")
SITES_TOO_FEW = ("Allocation sites are sampled{since}, but a site's trend needs "
                 f"{roundtrim_sites.MIN_POINTS} rounds with sites records and this process has "
                 "{have} so far: roundtrim report --sites LOG names the code that allocates the "
                 "growth once it has them.")


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _reason(v):
    return v if isinstance(v, str) and REASON.fullmatch(v) else "-"


def _record_value(rec, where):
    """A number the round record holds at `where` (a key, or memory.KEY), 0 when it has none."""
    if where.startswith("memory."):
        memory = rec.get("memory")
        value = memory.get(where[7:]) if isinstance(memory, dict) else None
    else:
        value = rec.get(where)
    return value if _whole(value) else 0


def _sample_fields(rec, kind, where):
    """One row of the diagnosis's input (fields.DIAG_INPUT), as roundtrim-diagnose reads it."""
    if kind == "PARTS":
        memory = rec["memory"]
        mask, values = 0, []
        for i, part in enumerate(DIAG_PARTS):
            v = memory.get(part)
            if _whole(v):
                mask |= 1 << i
            values.append(v if _whole(v) else 0)
        return [mask, *values]
    if kind == "HEADROOM":
        of_key, bytes_key = where.split(",")
        of, room = rec.get(of_key), rec.get(bytes_key)
        known = _whole(room) and of in HEADROOM_OF
        return [of if known else "-", room if known else 0]
    if kind == "REASON":
        return [_reason(rec.get(where))]
    if kind == "FLAG":
        if where.startswith("cleanup:"):
            cleanup = rec.get("cleanup") if isinstance(rec.get("cleanup"), list) else []
            return [int(any(a in cleanup for a in where[8:].split("|")))]
        key, _, wanted = where.partition("=")
        return [int(rec.get(key) == wanted)]
    return [sum(_record_value(rec, w) for w in where.split("+"))]


def sample_line(rec):
    """A round record as roundtrim-diagnose reads it, or None for a round the library leaves out
    too (memory not measured; the first round, which carries the program's start)."""
    memory = rec.get("memory")
    rnd, merged = rec.get("round"), rec.get("merged_rounds", 0)
    if not isinstance(memory, dict) or not _whole(rnd) or not _whole(merged) or rnd - merged <= 1:
        return None
    if not _whole(memory.get("rss")):
        return None
    fields = ["sample"]
    for _, kind, where in DIAG_INPUT:
        fields += _sample_fields(rec, kind, where)
    return " ".join(str(f) for f in fields)


def _setting(start, name, whole=False):
    """The option's value in force as the start record says it, else the library's default
    (a whole number's when whole and the value is not one)."""
    settings = start.get("settings") if isinstance(start, dict) else None
    entry = settings.get(name) if isinstance(settings, dict) else None
    value = entry.get("value") if isinstance(entry, dict) else None
    if not isinstance(value, str) or (whole and not value.isdigit()):
        return OPTION_DEFAULTS.get(name)
    return value


def context_line(proc, kept):
    """What the advice may refer to, from the start record, as the library has it: the
    DIAG_CONTEXT rows in their order, each from its source."""
    start = proc.start if isinstance(getattr(proc, "start", None), dict) else {}
    asked = _setting(start, SITES_OPTION) == "true"
    # Unset, sampling starts by itself once live memory rises: its sites records say it ran.
    sampled = asked or bool(getattr(getattr(proc, "sites", None), "count", 0))
    sites_skipped = _reason(start.get("sites_skipped")) if asked else "-"
    worked_out = {
        "sites": int(sampled and sites_skipped == "-"),
        "sites_skipped": sites_skipped,
        "python": int(any(int(line.split()[PARTS_MASK_FIELD]) & PYTHON_BIT
                          for line in kept.samples)),
        "allocator": _reason(start.get("allocator") or getattr(proc, "allocator", None)),
    }
    fields = ["context"]
    for _, kind, source in DIAG_CONTEXT:
        if source in worked_out:
            fields.append(worked_out[source])
        elif kind == "FLAG":
            fields.append(int(_setting(start, source) == "true"))
        else:
            fields.append(_setting(start, source, whole=kind == "UINT"))
    return " ".join(str(f) for f in fields)


def computed_diagnosis(proc, kept):
    """The library's diagnosis over the process's round records (roundtrim-diagnose), as the
    record it would have written, or None with why not."""
    tool = next((p for p in DIAGNOSE if os.access(p, os.X_OK)), None)
    if tool is None:
        return None, "no_diagnose_command"
    text = context_line(proc, kept) + "\n" + "\n".join(kept.samples) + "\n"
    try:
        res = subprocess.run([str(tool)], input=text, capture_output=True, text=True,
                             timeout=60, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        rec = json.loads(res.stdout) if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        rec = None
    if not isinstance(rec, dict):
        return None, "diagnose_failed"
    rec["round"] = kept.last_round
    rec["computed_by"] = "report"
    return rec, None


def _rate(value):
    if not isinstance(value, (int, float)):
        return "?"
    return f"{value / MIB:+.2f} MiB/round"


def _flat_words(growth, noise, rounds):
    """Memory where the verdict is none, with the figure the verdict's series allows: flat
    within the scatter of the rounds, or falling; never a rise beside "no growth" (a fit pulled
    up by one low round, or a rise that stopped, is not growth)."""
    if isinstance(growth, (int, float)) and isinstance(noise, (int, float)):
        if abs(growth) <= noise:
            return f"memory flat over {rounds} (within noise: +/-{noise / MIB:.2f} MiB/round)"
        if growth > 0:
            return (f"memory flat over {rounds} but for a step or a rise that stopped (no part "
                    "keeps growing)")
    if isinstance(growth, (int, float)) and growth < 0:
        return f"memory {_rate(growth)} over {rounds}"
    return f"memory flat over {rounds}: no part keeps growing"


def growing_sites(proc, resolver):
    """The sites that grow, for a leak: [{site, bytes_per_round, live_bytes, name, stack}]."""
    window = proc.diagnosis.sites_records()[-roundtrim_sites.DEFAULT_LAST:]
    if len(window) < roundtrim_sites.MIN_POINTS:
        return []
    grows, _ = roundtrim_sites.growing_sites(window)
    grows = grows[:MAX_SITES]
    frames = [f for g in grows for f in roundtrim_sites.shown_frames(g.site.entry)]
    resolver.resolve_all(frames)
    return [{
        "site": g.site.id,
        "bytes_per_round": round(g.per_round),
        "live_bytes": g.last_live,
        "first_round": g.points[0][0],
        "last_round": g.points[-1][0],
        "name": roundtrim_sites.best_name(g.site.entry, resolver),
        "stack": roundtrim_sites.stack_lines(g.site.entry, resolver),
    } for g in grows]


def diagnosis_of(proc, resolver):
    """The process's diagnosis as the report's JSON gives it."""
    kept = proc.diagnosis
    rec = kept.latest
    # No verdict of its own, or none since its last rounds and no exit to write one (ended by a
    # signal): the library's code over the round records.
    stale = (rec is not None and getattr(proc, "exit", None) is None
             and _whole(rec.get("round")) and _whole(kept.last_round)
             and kept.last_round > rec["round"])
    if (rec is None or stale) and len(kept.samples) >= DIAG_MIN_ROUNDS:
        computed, _ = computed_diagnosis(proc, kept)
        rec = computed or rec
    if rec is None:
        if kept.with_breakdown == 0 and kept.without_breakdown > 0:
            return {"cause": None, "cause_skipped": "no_breakdown",
                    "advice": "This log's round records have no memory breakdown (written by an "
                              "earlier roundtrim): a leak cannot be told from fragmentation, "
                              "garbage or the CUDA cache. The RSS trend is all it says."}
        if kept.with_breakdown < DIAG_MIN_ROUNDS:
            return {"cause": None, "cause_skipped": "too_few_rounds",
                    "advice": f"{kept.with_breakdown} round(s) with a memory breakdown: a "
                              f"diagnosis needs {DIAG_MIN_ROUNDS}."}
        return {"cause": None, "cause_skipped": "no_diagnosis_record",
                "advice": "The process wrote no diagnosis record yet: it writes one every "
                          "ROUNDTRIM_DIAG_ROUNDS rounds and at exit, and ended (killed?) or "
                          "is running before its first."}
    d = {k: v for k, v in rec.items() if k not in ENVELOPE}
    d["round"] = rec.get("round")
    if d.get("cause") in ("leak", "unsure") and kept.holders is not None:
        d["holders"] = kept.holders["holders"]
        d["holders_round"] = kept.holders["round"]
    counts = recovered_rounds(proc, d)
    if counts is not None:
        d["recovered_rounds"] = counts
    d = headline_first(d)
    if d.get("cause") == "leak":
        if proc.sites.count:
            d["sites"] = growing_sites(proc, resolver)
            records = kept.sites_records()
            since = records[-1].get("sampling_since") if records else None
            if isinstance(since, int) and not isinstance(since, bool) and since > 0:
                d["sites_since"] = since  # started by itself: sites hold what came since
            have = len(records[-roundtrim_sites.DEFAULT_LAST:])
            if have < roundtrim_sites.MIN_POINTS:
                d["sites_skipped"] = "too_few_sites_records"
                d["sites_records"] = have
            elif not d["sites"]:
                d["sites_skipped"] = "no_growing_site"
            if not d["sites"]:
                # The records say otherwise than the advice's sentence on sampled sites.
                d["advice"] = advice_without_sampled_sites(d, d["sites_skipped"], have)
        else:
            d["sites"] = []
            d["sites_skipped"] = "sampling_off"
    return d


# What each cleanup action gave back in a round record, by the names of the diagnosis's
# "recovered" object: the round record's keys its DIAG_INPUT row adds up.
_INPUT_RECORD = {member: record for member, _, record in DIAG_INPUT}
RECOVERED_FIELDS = {action: tuple(_INPUT_RECORD[given].split("+"))
                    for action, given in DIAG_ACTIONS}


def recovered_rounds(proc, d):
    """In how many rounds of the diagnosis's window each cleanup action gave anything back (its
    figure is a mean: a few rounds may carry it), or None without a window."""
    first, last = d.get("first_round"), d.get("last_round")
    if not (_whole(first) and _whole(last)):
        return None
    rounds = proc.rounds
    numbers = list(rounds.field("round"))
    counts = {}
    for name, fields in RECOVERED_FIELDS.items():
        given = [0] * len(numbers)
        for field in fields:
            for i, v in enumerate(rounds.field(field)):
                if isinstance(v, (int, float)) and v > 0:
                    given[i] += v
        counts[name] = sum(1 for n, v in zip(numbers, given)
                           if _whole(n) and first <= n <= last and v > 0)
    return counts


# What a person reads first, in every form of the report: the verdict, what keeps the memory, and
# when it will hurt; the breakdown (slopes, shares, what cleanup recovers) after them.
HEADLINE = ("round", "cause", "cause_skipped", "mixed", "decided_by", "rounds", "first_round",
            "last_round", "growth_bytes_per_round", "holders", "holders_round", "forecast",
            "forecast_skipped")


def headline_first(d):
    """The diagnosis object with its HEADLINE keys first, in that order, the others after."""
    out = {k: d[k] for k in HEADLINE if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


def window_words(d):
    """The rounds the verdict's figures cover: "rounds 11-20"."""
    return f"rounds {d.get('first_round')}-{d.get('last_round')}"


def advice_without_sampled_sites(d, skipped="no_growing_site", have=0):
    """The advice with its sentence on sampled sites, where the record's advice_sites puts it,
    replaced by what the sites records show: no site grows (skipped "no_growing_site"), or too
    few records, `have`, to tell yet ("too_few_sites_records"). As it is without that sentence
    (an older library's record says nothing of where it is)."""
    advice, said = d.get("advice"), d.get("advice_sites")
    if not isinstance(advice, str) or not isinstance(said, dict) or said.get("said") != SITES_SAMPLED:
        return advice
    at, length = said.get("at"), said.get("length")
    if not _whole(at) or not _whole(length) or at + length > len(advice):
        return advice
    if skipped == "too_few_sites_records":
        since = d.get("sites_since")
        sentence = SITES_TOO_FEW.format(
            since=f" from round {since}" if _whole(since) and since else "", have=have)
    else:
        sentence = SITES_NONE
    return advice[:at] + sentence + advice[at + length:]


def forecast_line(d):
    """When the growth reaches the memory limit, as the diagnosis's forecast says: the line the
    report gives first after the verdict, or None where there is nothing to foresee."""
    f = d.get("forecast")
    if not isinstance(f, dict):
        skipped = d.get("forecast_skipped")
        # no growth: nothing to foresee, no line
        why = DIAG_REASONS.get(skipped) if skipped != "no_growth" else None
        return f"    forecast: none ({why})" if why else None
    rounds, at, room = f.get("rounds_to_limit"), f.get("limit_round"), f.get("headroom_bytes")
    if not (_whole(rounds) and _whole(at) and _whole(room)):
        return None
    where = "its cgroup's limit" if f.get("headroom_of") == CGROUP else "the machine's memory"
    line = (f"    forecast: at the growth of {window_words(d)} it uses up the {room / MIB:.0f} MiB "
            f"left under {where} in about {rounds} rounds (round {at})")
    job, before = f.get("job_rounds"), f.get("before_job_end")
    if not _whole(job):
        before = None
    if before is True:
        return line + f": BEFORE the job's {job} rounds end"
    if before is False:
        return line + f", after the job's {job} rounds"
    return line + " (ROUNDTRIM_JOB_ROUNDS unset: whether the job ends first is not known)"


def _bytes_words(n):
    return f"{n / MIB:.1f} MiB" if n >= 0.1 * MIB else f"{n / 1024:.0f} KiB"


def holder_lines(d):
    """What keeps the memory, first: the holders the search found growing."""
    holders = d.get("holders")
    if not isinstance(holders, list):
        return []
    if not holders:
        return [f"    holder: none found growing in the program's objects (walk of round "
                f"{d.get('holders_round')}: modules, classes, loggers, frames)"]
    out = []
    for n, h in enumerate(holders[:3]):
        items, per = h.get("items_per_round"), h.get("bytes_per_round")
        what = [str(h.get("type", "?"))]
        if isinstance(items, (int, float)):
            what.append(f"+{items:g} item{'s' if items != 1 else ''} a round")
        if _whole(per) and per > 0:
            what.append(f"+{_bytes_words(per)} a round")
        label = "holder" if n == 0 else "   and"
        out.append(f"    {label}: {h['path']} ({', '.join(what)})")
    # The search's rates are over its own walks, not the verdict's rounds: said once.
    out.append(f"    (holder figures: the search's latest walks, up to round "
               f"{d.get('holders_round')})")
    return out


def text_lines(d):
    """The diagnosis in plain words, the first lines of a process's report."""
    verdict, headline, breakdown = text_parts(d)
    return [verdict] + headline + breakdown


def text_parts(d):
    """The diagnosis in plain words as (the verdict's line, the lines a person reads first: what
    keeps the memory and when it will hurt, the breakdown and advice after them)."""
    cause = d.get("cause")
    if cause is None:
        return f"  diagnosis: none ({d.get('cause_skipped')}). {d.get('advice', '')}", [], []
    words = CAUSE_WORDS.get(cause, cause)
    head = f"  diagnosis: {words}"
    if d.get("mixed"):
        head += " (mixed)"
    rounds = window_words(d)
    growth = d.get("growth_bytes_per_round")
    if cause == "none":
        verdict = f"{head}; {_flat_words(growth, d.get('growth_noise_bytes_per_round'), rounds)}"
    else:
        verdict = f"{head}; memory {_rate(growth)} over {rounds}"
    headline = holder_lines(d)
    forecast = forecast_line(d)
    if forecast:
        headline.append(forecast)
    lines = []
    slopes = d.get("slopes") or {}
    moving = [(k, v) for k, v in slopes.items()
              if isinstance(v, (int, float)) and abs(v) >= 64 * 1024]
    if moving:
        # Where nothing grows, a part's fit over the window is not growth: said so beside it.
        label = (f"by part over {rounds}, fitted (none keeps growing)" if cause == "none"
                 else f"by part over {rounds}")
        lines.append(f"    {label}: " + ", ".join(f"{PART_WORDS.get(k, k)} {_rate(v)}"
                                                  for k, v in moving))
    shares = d.get("shares") or {}
    if len(shares) > 1:
        lines.append("    shares: " + ", ".join(f"{k} {v}%" for k, v in shares.items()))
    recovered = d.get("recovered_bytes_per_round")
    if isinstance(recovered, (int, float)) and recovered >= 0.05 * MIB:
        parts = d.get("recovered") or {}
        counts = d.get("recovered_rounds") or {}

        def part_words(k, v):
            n = counts.get(k)
            if v > 0 and _whole(n):
                return f"{k} {v / MIB:.1f} MiB, in {n} of {rounds}"
            return f"{k} {v / MIB:.1f} MiB"

        lines.append(f"    cleanup recovers {recovered / MIB:.1f} MiB/round on average over "
                     f"{rounds} ("
                     + "; ".join(part_words(k, v) for k, v in parts.items()
                                 if isinstance(v, (int, float)))
                     + ")")
    lines.append(f"    {d.get('advice', '')}")
    if d.get("sites") and d.get("sites_since"):
        lines.append(f"    sites sampled from round {d['sites_since']} (started by the verdict of "
                     "growth): their live bytes are what was allocated since")
    for n, site in enumerate(d.get("sites") or [], 1):
        lines.append(f"    growing site {n}: {site['name']} "
                     f"{_rate(site['bytes_per_round'])} over rounds {site.get('first_round')}-"
                     f"{site.get('last_round')} (its sites records), live "
                     f"{site['live_bytes'] / MIB:.1f} MiB")
        for frame in site["stack"][:6]:
            lines.append(f"        {frame}")
    if d.get("sites_skipped") == "no_growing_site":
        lines.append("    no sampled site grows over the last rounds with sites records")
    elif d.get("sites_skipped") == "too_few_sites_records":
        lines.append(f"    sites: a trend needs {roundtrim_sites.MIN_POINTS} rounds with sites "
                     f"records; this process has {d.get('sites_records')}")
    if d.get("computed_by") == "report":
        lines.append("    (the process wrote no diagnosis for these rounds: the report computed "
                     "it from its round records with the library's code)")
    return verdict, headline, lines
