"""Helpers shared by the load generator's tests: groups, driving an engine to its end, free ports, and a
``LoadResult`` built from real HDR histograms (``sample_result``) for the report's tests.

A test imports it as ``from tests.support.loadkit import ...``.
"""

from __future__ import annotations

import functools
import socket
import time
from types import ModuleType, SimpleNamespace
from typing import Any

from fastnet.load._hist import Histograms, log_bins, new_histogram, percentile_points, summary
from fastnet.load._result import ErrorGroup, Generator, LoadResult, stats_from

__all__ = ["drive", "group", "refused_port", "request_bytes", "sample_result"]


def request_bytes(port: int, path: str = "/", method: str = "GET", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode()


def group(port: int, *paths: str, method: str = "GET", extra: str = "", address: bool = True) -> Any:
    """A group of requests to 127.0.0.1:``port`` (``paths`` default to ``/``)."""
    return SimpleNamespace(
        requests=[request_bytes(port, p, method, extra) for p in (paths or ("/",))],
        address=(socket.AF_INET, "127.0.0.1", port) if address else None,
        label=f"127.0.0.1:{port}",
    )


def drive(
    module: ModuleType, groups: list[Any], connections: list[int], **options: Any
) -> tuple[Any, Histograms]:
    """Run an ``Engine`` of ``module`` to its end (at most 20 s), close it, return it and its histograms."""
    histograms = Histograms.new()
    settings: dict[str, Any] = {"total": -1, "duration": 0.0, "rate": 0.0, "timeout": 5.0, "head": False}
    settings.update(options)
    engine = module.Engine(groups, connections, recorders=histograms, **settings)
    limit = time.monotonic() + 20
    try:
        while not engine.run(time.monotonic_ns() + 100_000_000):
            assert time.monotonic() < limit, "the engine did not finish in 20 s"
    finally:
        engine.close()
    return engine, histograms


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@functools.cache
def _figures(values: tuple[int, ...]) -> tuple[Any, ...]:
    """The figures of a latency histogram of ``values`` (µs) and of a one-value connect histogram (hdrh's
    summary walks the whole histogram: worth doing once per set of values)."""
    latency = new_histogram()
    for value in values:
        latency.record_value(value)
    connect = new_histogram()
    connect.record_value(150)
    return (
        stats_from(summary(latency)),
        stats_from(summary(connect)),
        percentile_points(latency),
        log_bins(latency),
        latency,
    )


def sample_result(latencies_us: list[int] | None = None, **overrides: Any) -> LoadResult:
    """A ``LoadResult`` as ``run()`` makes one: its latency figures, percentiles and bins read from a real
    HDR histogram of ``latencies_us`` (µs); 200 responses, one error group, a connect phase."""
    values = latencies_us if latencies_us is not None else [1000 + 10 * i for i in range(100)] + [250_000]
    latency, connect, percentiles, bins, histogram = _figures(tuple(values))
    fields: dict[str, Any] = dict(
        urls=["http://127.0.0.1:8080/"],
        engine="c",
        connections=4,
        method="GET",
        keepalive=True,
        rate=None,
        requests_limit=len(values) + 2,
        duration_limit=None,
        stopped_by="requests",
        elapsed=2.0,
        completed=len(values),
        failed=2,
        abandoned=0,
        backlog=0,
        bytes_received=3 << 20,
        connections_opened=4,
        latency=latency,
        phases={"dns": None, "connect": connect, "tls": None, "first_byte": None, "response": None},
        status_codes={200: len(values) - 1, 503: 1},
        errors=[ErrorGroup("ConnectError (ECONNREFUSED)", 2, "connection refused: <127.0.0.1:1>")],
        generator=Generator(cpu=0.25, waiting=0.05, demand=0.3, saturated=False, lag=None, note="not busy"),
        percentiles=list(percentiles),
        histogram=list(bins),
        latency_histogram=histogram,
    )
    fields.update(overrides)
    return LoadResult(**fields)
