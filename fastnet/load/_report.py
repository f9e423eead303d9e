"""The text report of a load run: throughput, latency figures and histogram, phases, statuses, errors,
and whether the generator itself was the bottleneck."""

from __future__ import annotations

from fastnet.load._result import LatencyStats, LoadResult

__all__ = ["format_bytes", "format_seconds", "render", "render_histogram"]

_BAR = "■"
_BAR_WIDTH = 40
_PHASE_NAMES = {
    "dns": "DNS",
    "connect": "connect",
    "tls": "TLS",
    "first_byte": "first byte",
    "response": "sent → done",
}


def format_seconds(value: float) -> str:
    """``412 µs``, ``3.25 ms``, ``1.50 s``."""
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1.0:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def format_bytes(value: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


def _describe(result: LoadResult) -> str:
    parts = [f"{result.connections} connection{'s' if result.connections != 1 else ''}"]
    if result.requests_limit is not None:
        parts.append(f"{result.requests_limit:,} requests")
    if result.duration_limit is not None:
        parts.append(f"{result.duration_limit:g} s")
    parts.append(f"open loop at {result.rate:g}/s" if result.rate else "closed loop")
    parts.append(result.method)
    parts.append("keep-alive" if result.keepalive else "a new connection per request")
    parts.append(f"{'compiled' if result.engine == 'c' else 'pure-Python'} engine")
    return ", ".join(parts)


def render_histogram(bins: list[tuple[float, int]], indent: str = "  ") -> list[str]:
    """Bars of ``■`` scaled to the fullest bin, one line per (upper bound, count)."""
    if not bins:
        return []
    top = max(count for _, count in bins) or 1
    width = max(len(f"{count:,}") for _, count in bins)
    lines = []
    for upper, count in bins:
        bar = _BAR * (round(count / top * _BAR_WIDTH) if count else 0)
        if count and not bar:
            bar = "▏"
        lines.append(f"{indent}{format_seconds(upper):>10} [{count:>{width},}] |{bar}")
    return lines


def _stats_row(stats: LatencyStats) -> str:
    cells = [stats.min, stats.mean, stats.stdev, stats.p50, stats.p90, stats.p99, stats.p99_9, stats.max]
    return "".join(f"{format_seconds(v):>11}" for v in cells)


def render(result: LoadResult) -> str:
    """The report ``fastnet load`` prints."""
    out: list[str] = []
    target = result.urls[0] if len(result.urls) == 1 else f"{len(result.urls)} URLs, round-robin"
    out.append(f"fastnet load: {target}")
    if len(result.urls) > 1:
        out.extend(f"  {url}" for url in result.urls)
    out.append(f"  {_describe(result)}")
    if result.stopped_by == "interrupt":
        out.append("  interrupted (Ctrl-C): the figures cover what was done until then")
    out.append("")
    out.append(
        f"  Requests     {result.completed:,} responses in {result.elapsed:.2f} s: "
        f"{result.requests_per_second:,.1f} requests/s ({result.failed:,} failed)"
    )
    out.append(
        f"  Transfer     {format_bytes(result.bytes_received)} received: "
        f"{format_bytes(result.bytes_per_second)}/s; {result.connections_opened:,} connections opened"
    )
    if result.abandoned:
        out.append(f"  In flight    {result.abandoned:,} requests were still running when the time was up")
    if result.backlog:
        out.append(
            f"  Backlog      {result.backlog:,} requests were due but no connection was free to send them"
        )
    out.append("")
    if result.latency is not None:
        measured = "from each request's intended start" if result.rate else "from each request's start"
        out.append(f"  Latency ({measured})")
        out.append(
            "    "
            + "".join(f"{h:>11}" for h in ("min", "mean", "stdev", "p50", "p90", "p99", "p99.9", "max"))
        )
        out.append("    " + _stats_row(result.latency))
        out.append("")
        out.append("  Latency histogram")
        out.extend(render_histogram(result.histogram, indent="  "))
        out.append("")
    phases = [(name, stats) for name, stats in result.phases.items() if stats is not None]
    if phases:
        out.append(
            "  Phases" + " " * 10 + "".join(f"{h:>11}" for h in ("count", "mean", "p50", "p99", "max"))
        )
        for name, stats in phases:
            label = _PHASE_NAMES.get(name, name)
            out.append(
                f"    {label:<14}{stats.count:>11,}"
                + "".join(f"{format_seconds(v):>11}" for v in (stats.mean, stats.p50, stats.p99, stats.max))
            )
        out.append("")
    if result.status_codes:
        codes = ", ".join(f"{code}: {count:,}" for code, count in sorted(result.status_codes.items()))
        out.append(f"  Status codes {codes}")
    else:
        out.append("  Status codes none")
    if result.errors:
        out.append(f"  Errors       {result.failed:,} requests failed")
        for group in result.errors:
            out.append(f"    {group.count:>9,}  {group.type}")
            out.append(f"               e.g. {group.example}")
    else:
        out.append("  Errors       none")
    out.append("")
    g = result.generator
    out.append(
        f"  Generator    CPU {g.cpu:.0%}, waiting for a CPU {g.waiting:.0%} (busy {g.demand:.0%} of the run)"
        + (f"; sends late against the timetable by p99 {format_seconds(g.lag.p99)}" if g.lag else "")
    )
    out.append(f"               {g.note}")
    return "\n".join(out) + "\n"
