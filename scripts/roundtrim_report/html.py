"""`roundtrim report --html FILE`: one self-contained page for a round log (no script, no
network access needed to open it): per process the diagnosis (the verdict, what keeps the memory
and when it will hurt first, the breakdown after), a chart per round the page's whole width (the
parts of memory stacked, RSS before and after the cleanup, the live heap, what cleanup gave
back, an axis of rounds), the RSS trends with their rounds, the table of the rounds behind a
disclosure, the growing allocation sites with their stacks, and the notes about the log and the
records' skipped steps. The charts are inline SVG drawn here, so the page needs nothing but a
browser; every text from the log is escaped."""

import html
import time

from . import diagnosis as roundtrim_diagnosis
from .fields import MEM_PARTS
from .table import round_cells, table_columns, trend_lines

MIB = 1024.0 * 1024.0
MAX_POINTS = 600  # rounds drawn per chart; a longer log is drawn every k-th round
MAX_TABLE_ROWS = 2000  # rounds in a process's table: its last ones
MAX_TICKS = 12  # round labels on a chart's axis
# The stacked parts of RSS (the resident ones of the round record's memory object), each with its
# colour; a part without one is drawn in grey.
PART_COLOURS = {"heap_live": "#3b6ea8", "heap_free": "#e39b2d", "python": "#5aa05a",
                "other_anon": "#9a6fb0", "file": "#9c9c9c", "shmem": "#c9c9c9",
                "roundtrim": "#d9c36a"}
PARTS = tuple(("mem_" + part, words, PART_COLOURS.get(part, "#b0b0b0"))
              for part, resident, words in MEM_PARTS if resident)
UNMEASURED = "#dcdcdc"  # a round whose memory was not broken down: its RSS alone
# The lines over the bars: (key, class, colour, dashes, legend)
LINES = (("rss_before", "rss-before", "#777", "5 3", "RSS before cleanup"),
         ("rss_after", "rss-after", "#111", "", "RSS after cleanup"),
         ("heap_live", "heap-live", "#3b6ea8", "", "heap live"))
# The chart's drawing: the plot's width and height, its margins, the panel of what cleanup gave
# back and the axis of rounds under them.
WIDTH, HEIGHT, LEFT, RIGHT, TOP = 1200, 280, 56, 12, 12
YIELD_H, AXIS_H = 70, 34

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
p, pre, ul, .legend, details { max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.cause { font-weight: bold; } .advice { background: #f4f4f0; padding: .6em; }
.headline { background: #fff6e0; border-left: 4px solid #e39b2d; padding: .4em .6em;
            max-width: 1100px; }
.headline p { margin: .2em 0; }
.leak { color: #b22; } .none { color: #282; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; text-align: left; }
table.rounds td { text-align: right; font-variant-numeric: tabular-nums; }
table.rounds td:last-child { text-align: left; }
pre { background: #f8f8f8; padding: .5em; white-space: pre-wrap; }
svg.chart { width: 100%; height: auto; display: block; }
.legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; }
.legend i.dashed, .legend i.solid { width: 22px; height: 0; vertical-align: middle; }
.legend i.dashed { border-top: 2px dashed #777; } .legend i.solid { border-top: 2px solid #111; }
.warnings li { color: #844; }
"""


def esc(text):
    return html.escape(str(text), quote=True)


def sampled(rounds):
    """The rounds drawn: all of them, or every k-th (the last always)."""
    n = len(rounds)
    step = max(1, -(-n // MAX_POINTS))
    picked = [rounds[i] for i in range(0, n, step)]
    if n and (n - 1) % step:
        picked.append(rounds[n - 1])
    return picked


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def tick_step(span):
    """Rounds between two labels of the axis: 1, 2, 5, 10, 20, 50... so that at most MAX_TICKS
    labels cover span rounds."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if span / (step * m) <= MAX_TICKS:
                return step * m
        step *= 10


def tick_indexes(pts):
    """The points of the axis that get a label: the first round, the first round drawn at or past
    each multiple of the step (the multiple itself unless rounds are drawn every k-th), and the
    last when it is not too close to the one before."""
    numbers = [r.get("round") if _whole(r.get("round")) else None for r in pts]
    known = [n for n in numbers if n is not None]
    if not known:
        return []
    step = tick_step(max(known) - min(known))
    picked, bucket = [], None
    for i, n in enumerate(numbers):
        if n is None or n // step == bucket:
            continue
        if len(picked) == 1 and n - numbers[picked[0]] < step * 0.75:
            picked.pop()  # the first round, just before a multiple: the multiple instead
        picked.append(i)
        bucket = n // step
    last = len(numbers) - 1
    if numbers[last] is not None and last not in picked:
        room = len(numbers) / MAX_TICKS / 2
        if picked and last - picked[-1] < room:
            picked.pop()
        picked.append(last)
    return picked


def stack_top(r):
    return sum(r.get(k) or 0 for k, _, _ in PARTS)


def has_parts(r):
    return any(_number(r.get(k)) for k, _, _ in PARTS)


def chart(rounds):
    """An SVG of the rounds the page's width: stacked parts (a grey bar of its RSS for a round
    whose memory was not broken down, as one recorded while the process exits), RSS before and
    after the cleanup and the live heap as lines, under it the bytes cleanup gave back per round,
    and an axis of rounds labelled every few rounds."""
    pts = sampled(rounds)
    if not pts:
        return "<p>no rounds recorded</p>"
    any_parts = any(has_parts(r) for r in pts)
    top = max(max(r.get("rss_before") or 0, r.get("rss_after") or 0, stack_top(r))
              for r in pts) or 1
    n = len(pts)
    plot_w = WIDTH - LEFT - RIGHT
    bar = plot_w / n
    total_h = TOP + HEIGHT + YIELD_H + AXIS_H

    def x(i):
        return LEFT + i * bar

    def y(v):
        return TOP + HEIGHT * (1 - v / top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {total_h}" '
           f'width="{WIDTH}" height="{total_h}" preserveAspectRatio="xMinYMin meet" role="img" '
           'class="chart">']
    for frac in (0, 0.25, 0.5, 0.75, 1):
        v = top * frac
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   'stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 4}" y="{y(v) + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{v / MIB:.0f}</text>')
    out.append(f'<text x="4" y="{TOP + 10}" font-size="11">MiB</text>')
    width = max(bar - 1, 1) if n > 1 else bar
    for i, r in enumerate(pts):
        label = esc(f"round {r.get('round', '?')}")
        if any_parts and has_parts(r):
            base = 0
            for key, name, color in PARTS:
                v = r.get(key) or 0
                if v <= 0:
                    continue
                out.append(f'<rect class="part" data-part="{esc(name)}" x="{x(i):.1f}" '
                           f'y="{y(base + v):.1f}" width="{width:.1f}" '
                           f'height="{y(base) - y(base + v):.1f}" fill="{color}">'
                           f"<title>{label}: {esc(name)} {v / MIB:.1f} MiB</title></rect>")
                base += v
        else:
            rss = r.get("rss_before") if _number(r.get("rss_before")) else r.get("rss_after")
            if _number(rss) and rss > 0:
                out.append(f'<rect class="unmeasured" x="{x(i):.1f}" y="{y(rss):.1f}" '
                           f'width="{width:.1f}" height="{y(0) - y(rss):.1f}" '
                           f'fill="{UNMEASURED}"><title>{label}: RSS {rss / MIB:.1f} MiB, '
                           "not broken down</title></rect>")
    for key, css, color, dashes, name in LINES:
        coords = [f"{x(i) + bar / 2:.1f},{y(r[key]):.1f}" for i, r in enumerate(pts)
                  if _number(r.get(key))]
        if coords:
            dash = f' stroke-dasharray="{dashes}"' if dashes else ""
            out.append(f'<polyline class="line {css}" data-line="{esc(name)}" fill="none" '
                       f'stroke="{color}" stroke-width="2"{dash} points="{" ".join(coords)}"/>')
    ytop = TOP + HEIGHT + 8
    gave = [(r.get("trim_released_bytes") or 0) + (r.get("gc_freed_bytes") or 0) for r in pts]
    most = max(gave) or 1
    out.append(f'<text x="{LEFT}" y="{ytop + 10}" font-size="11">cleanup gave back per round '
               f'(trim + gc, up to {most / MIB:.1f} MiB)</text>')
    for i, v in enumerate(gave):
        if v > 0:
            h = (YIELD_H - 18) * v / most
            out.append(f'<rect class="yield" x="{x(i):.1f}" y="{ytop + YIELD_H - 8 - h:.1f}" '
                       f'width="{width:.1f}" height="{h:.1f}" fill="#2a9d8f"/>')
    axis = TOP + HEIGHT + YIELD_H
    out.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis}" y2="{axis}" '
               'stroke="#444"/>')
    for i in tick_indexes(pts):
        cx = x(i) + bar / 2
        out.append(f'<line class="tick" x1="{cx:.1f}" x2="{cx:.1f}" y1="{axis}" '
                   f'y2="{axis + 5}" stroke="#444"/>')
        out.append(f'<text class="tick-label" x="{cx:.1f}" y="{axis + 17}" font-size="11" '
                   f'text-anchor="middle">{esc(pts[i]["round"])}</text>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{axis + 31}" font-size="11" '
               'text-anchor="end">round</text>')
    out.append("</svg>")
    legend = [f'<span><i style="background:{c}"></i>{esc(l)}</span>' for _, l, c in PARTS
              if any_parts]
    if any(not has_parts(r) for r in pts):
        legend.append(f'<span><i style="background:{UNMEASURED}"></i>RSS of a round not broken '
                      "down</span>")
    legend += ['<span><i class="dashed"></i>RSS before cleanup</span>',
               '<span><i class="solid"></i>RSS after cleanup: below the dashed line by what '
               "cleanup gave back (a rise from one round to the next is the program's)</span>",
               '<span><i style="background:#2a9d8f"></i>cleanup gave back</span>']
    return "\n".join(out) + f'\n<div class="legend">{"".join(legend)}</div>'


def rounds_table(proc):
    """The process's rounds as the text report's table, behind a disclosure: its last
    MAX_TABLE_ROWS rounds."""
    n = len(proc.rounds)
    if not n:
        return ""
    cols = table_columns(proc)
    t0 = proc.first_ts()
    shown = range(max(0, n - MAX_TABLE_ROWS), n)
    what = f"all {n}" if len(shown) == n else f"the last {len(shown)} of {n}"
    out = [f'<details class="rounds"><summary>Rounds: {what}, one row each (memory in MiB, '
           "time in seconds since the first record)</summary>", '<table class="rounds"><tr>']
    out += [f"<th>{esc(h)}</th>" for h, _, _ in cols]
    out.append("</tr>")
    for i in shown:
        cells = round_cells(t0, cols, proc.rounds[i])
        out.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    out.append("</table></details>")
    return "\n".join(out)


def diagnosis_html(d):
    """The verdict, then what keeps the memory and when it will hurt, then the breakdown."""
    cause = d.get("cause")
    verdict, headline, breakdown = roundtrim_diagnosis.text_parts(d)
    css = "none" if cause in (None, "none") else "leak" if cause == "leak" else ""
    out = [f'<p class="diagnosis">diagnosis: <span class="cause {css}" '
           f'data-cause="{esc(cause)}">{esc(cause or "not made")}</span> '
           f'<span class="verdict">{esc(verdict.strip()[len("diagnosis: "):])}</span></p>']
    if headline:
        out.append('<div class="headline">')
        for line in headline:
            kind = line.strip().split(":")[0]
            kind = kind if kind in ("holder", "forecast", "and") else "note"
            out.append(f'<p class="{kind}">{esc(line.strip())}</p>')
        out.append("</div>")
    if breakdown:
        out.append('<pre class="advice">' + esc("\n".join(l.strip() for l in breakdown))
                   + "</pre>")
    return "\n".join(out)


def trends_html(proc, d):
    lines = trend_lines(proc, d)
    if not lines:
        return ""
    return '<p class="trend">' + "<br>".join(esc(l.strip()) for l in lines) + "</p>"


def sites_html(d):
    sites = d.get("sites") or []
    if not sites:
        return ""
    out = ["<h3>Growing allocation sites</h3>", '<ol class="sites">']
    for s in sites:
        out.append(f'<li><span class="site-name">{esc(s["name"])}</span> '
                   f'+{s["bytes_per_round"] / MIB:.2f} MiB/round over rounds '
                   f'{esc(s.get("first_round"))}-{esc(s.get("last_round"))}, live '
                   f'{s["live_bytes"] / MIB:.1f} MiB<pre>{esc(chr(10).join(s["stack"]))}</pre>'
                   "</li>")
    out.append("</ol>")
    return "\n".join(out)


def skips_html(proc):
    if not proc.skips:
        return ""
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td><td>{n}</td></tr>"
                   for (k, v), n in sorted(proc.skips.items()))
    return ("<h3>Steps skipped in the records</h3><table><tr><th>field</th><th>reason</th>"
            f"<th>rounds</th></tr>{rows}</table>")


def write_page(path, procs, log, name, describe, resolver):
    """Writes the page a process at a time: what is held is one process's part, however many
    processes the log has."""
    head = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f"<title>roundtrim report: {esc(name)}</title>", f"<style>{STYLE}</style>",
            "</head><body>", f"<h1>roundtrim report: {esc(name)}</h1>",
            f"<p>{len(procs)} process(es); written "
            f"{esc(time.strftime('%Y-%m-%d %H:%M:%S'))}.</p>"]
    if log.warnings:
        head.append('<h2>Notes on the log</h2><ul class="warnings">')
        head += [f"<li>{esc(w)}</li>" for w in log.warnings]
        if log.skipped > len(log.warnings):
            head.append(f"<li>... and {log.skipped - len(log.warnings)} more lines skipped</li>")
        head.append("</ul>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(head) + "\n")
        for proc in procs:
            d = roundtrim_diagnosis.diagnosis_of(proc, resolver)
            parts = [f'<section class="process" data-pid="{proc.pid}">',
                     f"<h2>{esc(describe(proc))}</h2>", diagnosis_html(d),
                     chart(list(proc.rounds)), trends_html(proc, d), rounds_table(proc),
                     sites_html(d), skips_html(proc), "</section>"]
            f.write("\n".join(parts) + "\n")
        f.write("</body></html>\n")
