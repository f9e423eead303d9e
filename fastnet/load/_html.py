"""The ``--html`` report: one self-contained page (inline CSS and SVG, no script, nothing fetched) with
the latency distribution plotted.

Two plots are drawn as SVG here: latency by percentile, on the usual HDR x axis (the distance to 100%
on a log scale, so 90%, 99%, 99.9% ... are evenly spaced and the tail is visible), and the latency
histogram in log-spaced bins. Every text from the run (URLs, error examples) is HTML-escaped.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from fastnet.load._report import format_bytes, format_seconds
from fastnet.load._result import LatencyStats, LoadResult

__all__ = ["render_html", "write_html"]

_W, _H = 760, 300
_L, _R, _T, _B = 70, 40, 20, 50  # margins


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        top = step * 10**exp
        if top >= value:
            return float(top)
    return float(10 ** (exp + 1))


def _axis_label(value: float) -> str:
    return format_seconds(value).replace(" ", "\u00a0")


def _percentile_svg(points: list[tuple[float, float]]) -> str:
    """Latency (y) against percentile (x, log of 1 / (1 - p)), up to 99.999%."""
    if not points:
        return "<p>No latencies were recorded.</p>"
    max_nines = 5
    top = _nice_max(max(v for _, v in points))
    pw, ph = _W - _L - _R, _H - _T - _B

    def x_of(percentile: float) -> float:
        fraction = min(percentile / 100.0, 1 - 10**-max_nines)
        nines = -math.log10(1 - fraction)
        return _L + pw * nines / max_nines

    def y_of(value: float) -> float:
        return _T + ph * (1 - value / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" role="img" class="plot">']
    parts.append("<title>Latency by percentile</title>")
    for i in range(5):
        v = top * i / 4
        y = y_of(v)
        parts.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_axis_label(v)}</text>')
    for nines, label in enumerate(("0%", "90%", "99%", "99.9%", "99.99%", "99.999%")):
        x = _L + pw * nines / max_nines
        parts.append(f'<line x1="{x:.1f}" y1="{_T}" x2="{x:.1f}" y2="{_T + ph}" class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{_T + ph + 18}" text-anchor="middle">{label}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{x_of(p):.1f},{y_of(v):.1f}" for i, (p, v) in enumerate(points))
    parts.append(f'<path d="{path}" class="line"/>')
    parts.append(
        f'<text x="{_L + pw / 2:.0f}" y="{_H - 8}" text-anchor="middle" class="axis">percentile</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _histogram_svg(bins: list[tuple[float, int]]) -> str:
    if not bins:
        return ""
    top = max(n for _, n in bins) or 1
    pw, ph = _W - _L - _R, _H - _T - _B
    width = pw / len(bins)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" role="img" class="plot">']
    parts.append("<title>Latency histogram</title>")
    for i in range(5):
        v = top * i / 4
        y = _T + ph * (1 - i / 4)
        parts.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{v:,.0f}</text>')
    for i, (upper, count) in enumerate(bins):
        h = ph * count / top
        x = _L + i * width
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{_T + ph - h:.1f}" width="{max(width - 4, 1):.1f}" height="{h:.1f}" '
            f'class="bar"><title>≤ {_esc(format_seconds(upper))}: {count:,}</title></rect>'
        )
        if i % 2 == 0 or len(bins) <= 8:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{_T + ph + 18}" text-anchor="middle">'
                f"{_axis_label(upper)}</text>"
            )
    parts.append(
        f'<text x="{_L + pw / 2:.0f}" y="{_H - 8}" text-anchor="middle" class="axis">'
        "latency (upper bound of each bin)</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _stats_table(rows: list[tuple[str, LatencyStats]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max"))
    body = []
    for name, s in rows:
        cells = [f"{s.count:,}"] + [
            format_seconds(v) for v in (s.min, s.mean, s.p50, s.p90, s.p99, s.p99_9, s.max)
        ]
        body.append(f"<tr><th>{_esc(name)}</th>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:820px;color:#1d2330}
h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}
.sub{color:#5b6474;margin:0 0 16px;font-size:14px;word-break:break-all}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #d9dee7;border-radius:8px;padding:10px 14px;min-width:140px}
.card b{display:block;font-size:22px} .card span{color:#5b6474;font-size:13px}
table{border-collapse:collapse;font-size:13px;width:100%} td,th{padding:4px 8px;text-align:right}
tr:nth-child(even){background:#f4f6f9} th:first-child{text-align:left} table.narrow{width:auto}
.plot{width:100%;height:auto;font-size:11px;fill:#5b6474}
.grid{stroke:#e3e7ee} .line{fill:none;stroke:#2563eb;stroke-width:2.5} .bar{fill:#2563eb}
.axis{font-size:12px} .warn{color:#b42318} .ok{color:#067647} code{font-size:12px}
"""


def render_html(result: LoadResult) -> str:
    """The page as a string."""
    r = result
    title = r.urls[0] if len(r.urls) == 1 else f"{len(r.urls)} URLs"
    cards = [
        (f"{r.requests_per_second:,.0f}", "requests/s"),
        (format_seconds(r.latency.p50) if r.latency else "–", "p50 latency"),
        (format_seconds(r.latency.p99) if r.latency else "–", "p99 latency"),
        (f"{r.failed:,}", "failed requests"),
        (format_bytes(r.bytes_per_second) + "/s", "received"),
    ]
    phases = [(name.replace("_", " "), s) for name, s in r.phases.items() if s is not None]
    rows = ([("latency", r.latency)] if r.latency is not None else []) + phases
    statuses = "".join(
        f"<tr><th>{code}</th><td>{n:,}</td></tr>" for code, n in sorted(r.status_codes.items())
    )
    errors = "".join(
        f"<tr><th>{_esc(e.type)}</th><td>{e.count:,}</td><td style='text-align:left'>"
        f"<code>{_esc(e.example)}</code></td></tr>"
        for e in r.errors
    )
    g = r.generator
    mode = f"open loop at {r.rate:g} requests/s" if r.rate else "closed loop"
    limits = []
    if r.requests_limit is not None:
        limits.append(f"{r.requests_limit:,} requests")
    if r.duration_limit is not None:
        limits.append(f"{r.duration_limit:g} s")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>fastnet load: {_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>fastnet load</h1><p class='sub'>{'<br>'.join(_esc(u) for u in r.urls)}<br>",
        f"{r.connections} connections, {', '.join(limits)}, {mode}, {_esc(r.method)}, "
        f"{'keep-alive' if r.keepalive else 'new connection per request'}, "
        f"{'compiled' if r.engine == 'c' else 'pure-Python'} engine; {r.elapsed:.2f} s, "
        f"stopped by {_esc(r.stopped_by)}</p>",
        "<div class='cards'>"
        + "".join(f"<div class='card'><b>{_esc(v)}</b><span>{k}</span></div>" for v, k in cards)
        + "</div>",
        "<h2>Latency by percentile</h2>",
        _percentile_svg(r.percentiles),
        "<h2>Latency histogram</h2>",
        _histogram_svg(r.histogram),
        "<h2>Latency and phases</h2>",
        _stats_table(rows) if rows else "<p>None recorded.</p>",
        "<h2>Status codes</h2>",
        f"<table class='narrow'>{statuses}</table>" if statuses else "<p>No responses.</p>",
        "<h2>Errors</h2>",
        f"<table><tr><th>type</th><th>count</th><th style='text-align:left'>example</th></tr>{errors}</table>"
        if errors
        else "<p class='ok'>None.</p>",
        "<h2>Generator</h2>",
        f"<p class='{'warn' if g.saturated else 'ok'}'>CPU {g.cpu:.0%}, waiting for a CPU {g.waiting:.0%}: "
        f"{_esc(g.note)}</p>",
        "</body></html>",
    ]
    return "\n".join(parts)


def write_html(result: LoadResult, path: str | Path) -> None:
    """Write the page to ``path``."""
    Path(path).write_text(render_html(result), encoding="utf-8")
