"""The diagnosis part of `roundtrim report`: why each process's memory grows, in words and as
JSON (--json).

The process diagnoses itself (libroundtrim.so writes a "diagnosis" record every
ROUNDTRIM_DIAG_ROUNDS rounds and at exit, from the breakdown of its memory in each round
record); the report shows the latest one, with the allocation sites that grow when the cause is
a leak and sites were sampled (ROUNDTRIM_SITES=true). A log written before round records had a
memory breakdown gets no guess: the report says what it cannot tell.
"""

import json

import roundtrim_sites

MIB = 1024.0 * 1024.0
MAX_SITES = 3

CAUSE_WORDS = {
    "leak": "a leak: live memory grows",
    "fragmentation": "fragmentation: freed heap is kept resident",
    "garbage": "garbage: gc frees cyclic garbage every round",
    "cuda_cache": "the CUDA cache: device memory kept by caches",
    "outside_heap": "growth outside the heap",
    "none": "no growth",
}

PART_WORDS = {
    "heap_live": "heap live", "heap_free": "heap free (resident)", "python": "Python objects",
    "other_anon": "other anonymous", "file": "file-backed", "shmem": "shared",
    "device_live": "device live", "device_cached": "device cached",
}


# The fields of a diagnosis record the report shows (--json gives them as they are).
KEYS = ("cause", "cause_skipped", "mixed", "decided_by", "rounds", "first_round", "last_round",
        "growth_bytes_per_round", "slopes", "shares", "recovered_bytes_per_round", "recovered",
        "gc_collected_per_round", "heap_free_percent", "advice", "round")


class Kept:
    """What the report keeps for the diagnosis of one process."""

    __slots__ = ("latest", "with_breakdown", "without_breakdown", "sites_lines")

    def __init__(self):
        self.latest = None  # the last diagnosis record
        self.with_breakdown = 0  # rounds whose record has a memory breakdown
        self.without_breakdown = 0
        # The last sites records as their lines (one can be 512 KiB; parsed, several times
        # that): parsed only for a process whose cause is a leak.
        self.sites_lines = {}

    def add_round(self, record):
        if "memory" in record:
            self.with_breakdown += 1
        else:
            self.without_breakdown += 1

    def add_diagnosis(self, record):
        self.latest = {k: record[k] for k in KEYS if k in record}

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


def _rate(value):
    if not isinstance(value, (int, float)):
        return "?"
    return f"{value / MIB:+.2f} MiB/round"


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
        "name": roundtrim_sites.best_name(g.site.entry, resolver),
        "stack": roundtrim_sites.stack_lines(g.site.entry, resolver),
    } for g in grows]


def diagnosis_of(proc, resolver):
    """The process's diagnosis as the report's JSON gives it."""
    kept = proc.diagnosis
    rec = kept.latest
    if rec is None:
        if kept.with_breakdown == 0 and kept.without_breakdown > 0:
            return {"cause": None, "cause_skipped": "no_breakdown",
                    "advice": "This log's round records have no memory breakdown (written by an "
                              "earlier roundtrim): a leak cannot be told from fragmentation, "
                              "garbage or the CUDA cache. The RSS trend is all it says."}
        if kept.with_breakdown < 3:
            return {"cause": None, "cause_skipped": "too_few_rounds",
                    "advice": f"{kept.with_breakdown} round(s) with a memory breakdown: a "
                              "diagnosis needs 3."}
        return {"cause": None, "cause_skipped": "no_diagnosis_record",
                "advice": "The process wrote no diagnosis record yet: it writes one every "
                          "ROUNDTRIM_DIAG_ROUNDS rounds and at exit, and ended (killed?) or "
                          "is running before its first."}
    d = {k: rec[k] for k in KEYS if k in rec}
    d["round"] = rec.get("round")
    if d.get("cause") == "leak":
        if proc.sites.count:
            d["sites"] = growing_sites(proc, resolver)
            if not d["sites"]:
                d["sites_skipped"] = "no_growing_site"
        else:
            d["sites"] = []
            d["sites_skipped"] = "sampling_off"
    return d


def text_lines(d):
    """The diagnosis in plain words, the first lines of a process's report."""
    cause = d.get("cause")
    if cause is None:
        return [f"  diagnosis: none ({d.get('cause_skipped')}). {d.get('advice', '')}"]
    words = CAUSE_WORDS.get(cause, cause)
    head = f"  diagnosis: {words}"
    if d.get("mixed"):
        head += " (mixed)"
    rounds = f"rounds {d.get('first_round')}-{d.get('last_round')}"
    lines = [f"{head}; memory {_rate(d.get('growth_bytes_per_round'))} over {rounds}"]
    slopes = d.get("slopes") or {}
    moving = [(k, v) for k, v in slopes.items()
              if isinstance(v, (int, float)) and abs(v) >= 64 * 1024]
    if moving:
        lines.append("    by part: " + ", ".join(f"{PART_WORDS.get(k, k)} {_rate(v)}"
                                                 for k, v in moving))
    shares = d.get("shares") or {}
    if len(shares) > 1:
        lines.append("    shares: " + ", ".join(f"{k} {v}%" for k, v in shares.items()))
    recovered = d.get("recovered_bytes_per_round")
    if isinstance(recovered, (int, float)) and recovered >= 0.05 * MIB:
        parts = d.get("recovered") or {}
        lines.append(f"    cleanup recovers {recovered / MIB:.1f} MiB/round ("
                     + ", ".join(f"{k} {v / MIB:.1f} MiB" for k, v in parts.items()
                                 if isinstance(v, (int, float)))
                     + ")")
    lines.append(f"    {d.get('advice', '')}")
    for n, site in enumerate(d.get("sites") or [], 1):
        lines.append(f"    growing site {n}: {site['name']} "
                     f"{_rate(site['bytes_per_round'])}, live {site['live_bytes'] / MIB:.1f} MiB")
        for frame in site["stack"][:6]:
            lines.append(f"        {frame}")
    if d.get("sites_skipped") == "no_growing_site":
        lines.append("    no sampled site grows over the last rounds with sites records")
    return lines
