"""`roundtrim report --html FILE`: one self-contained page for a round log (no script, no
network access needed to open it): per process the diagnosis, a chart per round (the parts of
memory stacked, RSS after the cleanup, the live heap, what cleanup gave back), the growing
allocation sites with their stacks, and the notes about the log and the records' skipped steps.
The charts are inline SVG drawn here, so the page needs nothing but a browser."""

import html
import time

from . import diagnosis as roundtrim_diagnosis

MIB = 1024.0 * 1024.0
MAX_POINTS = 600  # rounds drawn per chart; a longer log is drawn every k-th round
PARTS = (("mem_heap_live", "heap live", "#3b6ea8"), ("mem_heap_free", "heap free (resident)",
                                                     "#e39b2d"),
         ("mem_python", "Python objects", "#5aa05a"), ("mem_other_anon", "other anonymous",
                                                       "#9a6fb0"),
         ("mem_file", "file-backed", "#9c9c9c"), ("mem_shmem", "shared", "#c9c9c9"))

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.cause { font-weight: bold; } .advice { background: #f4f4f0; padding: .6em; }
.leak { color: #b22; } .none { color: #282; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; text-align: left; }
pre { background: #f8f8f8; padding: .5em; white-space: pre-wrap; }
.legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; }
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


def chart(rounds):
    """An SVG of the rounds: stacked parts (when the records have them), RSS after the cleanup
    and the live heap as lines, and under it the bytes cleanup gave back per round."""
    pts = sampled(rounds)
    if not pts:
        return "<p>no rounds recorded</p>"
    width, height, pad, yield_h = 900, 280, 48, 70
    has_parts = any(r.get("mem_heap_live") is not None for r in pts)

    def stack_top(r):
        return sum(r.get(k) or 0 for k, _, _ in PARTS)

    top = max(max(r.get("rss_before") or 0, r.get("rss_after") or 0, stack_top(r))
              for r in pts) or 1
    n = len(pts)
    bar = (width - 2 * pad) / n
    x = lambda i: pad + i * bar  # noqa: E731
    y = lambda v: pad / 2 + (height - pad) * (1 - v / top)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height + yield_h + 20}" role="img" class="chart">']
    for frac in (0, 0.25, 0.5, 0.75, 1):
        v = top * frac
        out.append(f'<line x1="{pad}" x2="{width - pad}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   'stroke="#e4e4e4"/>')
        out.append(f'<text x="{pad - 4}" y="{y(v) + 4:.1f}" font-size="10" '
                   f'text-anchor="end">{v / MIB:.0f}</text>')
    out.append(f'<text x="4" y="12" font-size="10">MiB</text>')
    if has_parts:
        for i, r in enumerate(pts):
            base = 0
            for key, label, color in PARTS:
                v = r.get(key) or 0
                if v <= 0:
                    continue
                out.append(f'<rect class="part" data-part="{esc(label)}" x="{x(i):.1f}" '
                           f'y="{y(base + v):.1f}" width="{max(bar - 1, 1):.1f}" '
                           f'height="{y(base) - y(base + v):.1f}" fill="{color}"/>')
                base += v
    for key, color, label in (("rss_after", "#111", "RSS after cleanup"),
                              ("heap_live", "#3b6ea8", "heap live")):
        coords = [f"{x(i) + bar / 2:.1f},{y(r[key]):.1f}" for i, r in enumerate(pts)
                  if isinstance(r.get(key), (int, float))]
        if coords:
            out.append(f'<polyline class="line" data-line="{label}" fill="none" '
                       f'stroke="{color}" stroke-width="2" points="{" ".join(coords)}"/>')
    ytop = height + 10
    gave = [(r.get("trim_released_bytes") or 0) + (r.get("gc_freed_bytes") or 0) for r in pts]
    most = max(gave) or 1
    out.append(f'<text x="{pad}" y="{ytop + 8}" font-size="10">cleanup gave back per round '
               f'(trim + gc, up to {most / MIB:.1f} MiB)</text>')
    for i, v in enumerate(gave):
        if v > 0:
            h = (yield_h - 16) * v / most
            out.append(f'<rect class="yield" x="{x(i):.1f}" y="{ytop + yield_h - h:.1f}" '
                       f'width="{max(bar - 1, 1):.1f}" height="{h:.1f}" fill="#2a9d8f"/>')
    first, last = pts[0].get("round", "?"), pts[-1].get("round", "?")
    out.append(f'<text x="{pad}" y="{height + yield_h + 18}" font-size="10">round {first}</text>')
    out.append(f'<text x="{width - pad}" y="{height + yield_h + 18}" font-size="10" '
               f'text-anchor="end">round {last}</text>')
    out.append("</svg>")
    legend = [f'<span><i style="background:{c}"></i>{esc(l)}</span>' for _, l, c in PARTS
              if has_parts] + ['<span><i style="background:#111"></i>RSS after cleanup</span>',
                               '<span><i style="background:#2a9d8f"></i>cleanup gave back</span>']
    return "\n".join(out) + f'\n<div class="legend">{"".join(legend)}</div>'


def diagnosis_html(d):
    cause = d.get("cause")
    words = roundtrim_diagnosis.text_lines(d)
    css = "none" if cause in (None, "none") else "leak" if cause == "leak" else ""
    out = [f'<p class="diagnosis">diagnosis: <span class="cause {css}" '
           f'data-cause="{esc(cause)}">{esc(cause or "not made")}</span></p>']
    out.append('<pre class="advice">' + esc("\n".join(l.strip() for l in words)) + "</pre>")
    return "\n".join(out)


def sites_html(d):
    sites = d.get("sites") or []
    if not sites:
        return ""
    out = ["<h3>Growing allocation sites</h3>", '<ol class="sites">']
    for s in sites:
        out.append(f'<li><span class="site-name">{esc(s["name"])}</span> '
                   f'+{s["bytes_per_round"] / MIB:.2f} MiB/round, live '
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
                     chart(list(proc.rounds)), sites_html(d), skips_html(proc), "</section>"]
            f.write("\n".join(parts) + "\n")
        f.write("</body></html>\n")
