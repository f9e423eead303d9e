"""``fastnet.load.run()``: plan the targets, drive the loop in short turns, and build the result.

Theory of operation
-------------------
The loop runs in the calling thread, a quarter of a second at a time (``Engine.run(until)``); between
turns the progress display is updated, so nothing draws while requests are in flight and no thread
competes with the loop for the GIL (helper threads only exist for connections that need TLS or a
tunnel, and only while they connect). In the main thread, the first Ctrl-C asks the loop to stop at its
next turn, and the run ends with the report for what was done; a second Ctrl-C raises
``KeyboardInterrupt`` as usual.

Every run is bounded: by ``requests`` (each request ends by ``timeout`` at the latest), by
``duration``, or, when neither is given, by :data:`DEFAULT_DURATION`.
"""

from __future__ import annotations

import importlib
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

from fastnet import _compat
from fastnet.load import _hist, loop
from fastnet.load._cpu import SATURATED, ThreadClock
from fastnet.load._progress import Display, Snapshot
from fastnet.load._result import ErrorGroup, Generator, LoadResult, stats_from
from fastnet.load._targets import (
    LoadError,
    Preparer,
    default_resolver,
    parse_resolve,
    plan_groups,
    spread,
)
from fastnet.proxy import Proxy
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet.load._loop_py import Engine
    from fastnet.load._result import LatencyStats

__all__ = ["DEFAULT_CONNECTIONS", "DEFAULT_DURATION", "DEFAULT_TIMEOUT", "TICK", "engine_module", "run"]

#: Seconds a run lasts when neither ``requests`` nor ``duration`` is given.
DEFAULT_DURATION = 5.0
DEFAULT_CONNECTIONS = 50
DEFAULT_TIMEOUT = 10.0
#: Seconds between two turns of the loop (progress updates, signal checks).
TICK = 0.25
_MAX_SETUP_THREADS = 8


def engine_module(engine: str | None) -> ModuleType:
    """The loop twin to use: ``"c"``, ``"py"``, or ``None`` for the build's choice."""
    if engine is None:
        return loop
    if engine == "py":
        return importlib.import_module("fastnet.load._loop_py")
    if engine == "c":
        if _compat.NO_EXTENSIONS:
            raise LoadError("the compiled engine is not available in the pure-Python build")
        try:
            return importlib.import_module("fastnet.load._loop_c")
        except ImportError as exc:
            raise LoadError(f"the compiled engine is not built: {exc}") from exc
    raise ValueError(f"engine must be 'c', 'py' or None, not {engine!r}")


def _check_positive(name: str, value: float | None, *, integer: bool = False) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (integer and not isinstance(value, int))
    ):
        raise TypeError(f"{name} must be a{'n integer' if integer else ' number'}, not {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be positive, not {value!r}")


def _endpoints(urls: Sequence[URL], proxy: Proxy | None) -> set[tuple[str, int]]:
    points = {(u.host.lower(), u.port) for u in urls}
    if proxy is not None and proxy.host is not None and proxy.port is not None:
        points.add((proxy.host.lower(), proxy.port))
    return points


def run(
    urls: str | URL | Iterable[str | URL],
    *,
    connections: int = DEFAULT_CONNECTIONS,
    requests: int | None = None,
    duration: float | None = None,
    rate: float | None = None,
    method: str = "GET",
    headers: Iterable[tuple[str, str]] = (),
    body: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    proxy: str | Proxy | None = None,
    resolve: Iterable[str | tuple[str, int, str]] = (),
    insecure: bool = False,
    cacert: str | None = None,
    keepalive: bool = True,
    engine: str | None = None,
    display: Display | None = None,
    handle_sigint: bool = True,
) -> LoadResult:
    """Load ``urls`` (one or several, spread round-robin) and return what was measured.

    ``connections`` concurrent connections make ``requests`` requests, or run for ``duration`` seconds
    (:data:`DEFAULT_DURATION` when neither is given; with both, whichever comes first). ``rate`` makes
    it an open loop: requests start on a fixed timetable of ``rate`` per second and latency counts from
    each one's intended start. ``proxy`` is a proxy URL or a ``fastnet.Proxy``; ``resolve`` entries are
    ``"host:port:addr"`` overrides; ``insecure`` skips TLS verification, ``cacert`` trusts a CA bundle
    instead of certifi's. ``engine`` picks the loop twin (``"c"`` or ``"py"``); ``display`` shows
    progress. Raises ``LoadError`` when the run cannot start, ``ValueError``/``TypeError`` for bad
    arguments.

    >>> result = fastnet.load.run("http://127.0.0.1:8080/", requests=1000, connections=8)  # doctest: +SKIP
    >>> result.latency.p99 < 0.050                                                       # doctest: +SKIP
    True
    """
    url_list = [urls] if isinstance(urls, (str, URL)) else list(urls)
    if not url_list:
        raise ValueError("at least one URL is needed")
    parsed: list[URL] = []
    for item in url_list:
        try:
            url = item if isinstance(item, URL) else URL(str(item))
        except ValueError as exc:
            raise LoadError(f"bad URL {item!r}: {exc}") from None
        parsed.append(url)
    _check_positive("connections", connections, integer=True)
    _check_positive("requests", requests, integer=True)
    _check_positive("duration", duration)
    _check_positive("rate", rate)
    _check_positive("timeout", timeout)
    if requests is None and duration is None:
        duration = DEFAULT_DURATION
    if body is not None and not isinstance(body, bytes):
        raise TypeError(f"body must be bytes, not {type(body).__name__}")
    proxy_obj: Proxy | None
    if isinstance(proxy, str):
        try:
            proxy_obj = Proxy.from_url(proxy)
        except ValueError as exc:
            raise LoadError(f"bad proxy {proxy!r}: {exc}") from None
    else:
        proxy_obj = proxy
    if proxy_obj is not None and proxy_obj.is_direct:
        proxy_obj = None
    overrides = [parse_resolve(r) if isinstance(r, str) else r for r in resolve]
    wanted = _endpoints(parsed, proxy_obj)
    dns = default_resolver([o for o in overrides if (o[0], o[1]) in wanted])
    verify: bool | str = False if insecure else (cacert if cacert is not None else True)
    module = engine_module(engine)
    histograms = _hist.Histograms.new()

    headers_list = list(headers)
    groups = plan_groups(
        parsed,
        method=method,
        headers=headers_list,
        body=body,
        keepalive=keepalive,
        proxy=proxy_obj,
        dns=dns,
    )
    for group in groups:
        if group.dns_us >= 0:
            histograms.dns.record_value(group.dns_us)
    assignment = spread(groups, connections)
    preparer: Preparer | None = None
    if any(g.address is None for g in groups):
        preparer = Preparer(
            groups,
            proxy=proxy_obj,
            verify=verify,
            dns=dns,
            timeout=timeout,
            threads=min(connections, _MAX_SETUP_THREADS),
        )
    try:
        eng: Engine = module.Engine(
            groups,
            assignment,
            total=requests if requests is not None else -1,
            duration=duration or 0.0,
            rate=rate or 0.0,
            timeout=timeout,
            head=method == "HEAD",
            recorders=histograms,
            prepare=preparer.submit if preparer is not None else None,
            keepalive=keepalive and not _asks_to_close(headers_list),
        )
    except BaseException:
        if preparer is not None:
            preparer.close()
        raise
    if preparer is not None:
        preparer.deliver = eng.deliver
    shown = display if display is not None else Display()
    interrupted = False
    restore: Callable[[], None] | None = None
    if handle_sigint and threading.current_thread() is threading.main_thread():
        restore = _install_sigint(eng)
    clock = ThreadClock()
    tick = int(TICK * 1e9)
    last_done, last_t = 0, time.monotonic()
    try:
        shown.start()
        while True:
            try:
                finished = eng.run(time.monotonic_ns() + tick)
            except KeyboardInterrupt:
                interrupted = True
                eng.stop()
                finished = eng.run(time.monotonic_ns())
            now = time.monotonic()
            rate_now = (eng.completed - last_done) / (now - last_t) if now > last_t else 0.0
            last_done, last_t = eng.completed, now
            snapshot = _snapshot(eng, rate_now, requests, duration)
            if finished:
                shown.stop(snapshot)
                break
            shown.update(snapshot)
    finally:
        if restore is not None:
            restore()
        if preparer is not None:
            preparer.close()  # first: what its threads still deliver is closed with the engine
        eng.close()
    wall, on_cpu, waiting = clock.sample()
    if eng.reason == "stopped":
        interrupted = True
    return _result(
        eng,
        module,
        histograms,
        parsed,
        connections=connections,
        method=method,
        keepalive=keepalive,
        rate=rate,
        requests=requests,
        duration=duration,
        stopped_by="interrupt" if interrupted else str(eng.reason),
        cpu=(on_cpu / wall) if wall else 0.0,
        waiting=(waiting / wall) if wall else 0.0,
    )


def _asks_to_close(headers: Sequence[tuple[str, str]]) -> bool:
    return any(n.lower() == "connection" and "close" in v.lower() for n, v in headers)


def _snapshot(eng: Engine, rate_now: float, requests: int | None, duration: float | None) -> Snapshot:
    started = eng.started_ns
    end = eng.ended_ns if eng.finished else time.monotonic_ns()
    return Snapshot(
        elapsed=(end - started) / 1e9 if started else 0.0,
        completed=eng.completed,
        failed=eng.failed,
        rate=rate_now,
        total=requests,
        duration=duration,
    )


def _install_sigint(eng: Engine) -> Callable[[], None]:
    previous = signal.getsignal(signal.SIGINT)
    pressed = [False]

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if pressed[0]:
            raise KeyboardInterrupt
        pressed[0] = True
        eng.stop()

    signal.signal(signal.SIGINT, on_sigint)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    return restore


def _generator_note(demand: float, saturated: bool, rate: float | None, lag: LatencyStats | None) -> str:
    if saturated:
        return (
            f"saturated: the generator's thread was busy {demand:.0%} of the run, so fastnet load, not "
            "the server, set the pace (a --rate below this throughput measures the server; for more load, "
            "run more generators)"
        )
    if rate and lag is not None and lag.p99 > 0.005:
        return "not saturated, but some sends left late against the timetable (p99 above 5 ms)"
    return "not saturated: the generator kept up and waited for the server"


def _result(
    eng: Engine,
    module: ModuleType,
    histograms: _hist.Histograms,
    urls: list[URL],
    *,
    connections: int,
    method: str,
    keepalive: bool,
    rate: float | None,
    requests: int | None,
    duration: float | None,
    stopped_by: str,
    cpu: float,
    waiting: float,
) -> LoadResult:
    elapsed = (eng.ended_ns - eng.started_ns) / 1e9 if eng.started_ns else 0.0
    demand = cpu + waiting
    saturated = demand >= SATURATED
    lag = stats_from(_hist.summary(histograms.lag)) if rate else None
    errors = sorted(
        (ErrorGroup(key, count, example) for key, (count, example) in eng.errors().items()),
        key=lambda e: (-e.count, e.type),
    )
    return LoadResult(
        urls=[str(u) for u in urls],
        engine=str(module.IMPLEMENTATION),
        connections=connections,
        method=method,
        keepalive=keepalive,
        rate=rate,
        requests_limit=requests,
        duration_limit=duration,
        stopped_by=stopped_by,
        elapsed=elapsed,
        completed=int(eng.completed),
        failed=int(eng.failed),
        abandoned=int(eng.abandoned),
        backlog=int(eng.backlog),
        bytes_received=int(eng.bytes_received),
        connections_opened=int(eng.connections_opened),
        latency=stats_from(_hist.summary(histograms.latency)),
        phases={
            "dns": stats_from(_hist.summary(histograms.dns)),
            "connect": stats_from(_hist.summary(histograms.connect)),
            "tls": stats_from(_hist.summary(histograms.tls)),
            "first_byte": stats_from(_hist.summary(histograms.first_byte)),
            "response": stats_from(_hist.summary(histograms.response)),
        },
        status_codes=eng.statuses(),
        errors=errors,
        generator=Generator(
            cpu=cpu,
            waiting=waiting,
            demand=demand,
            saturated=saturated,
            lag=lag,
            note=_generator_note(demand, saturated, rate, lag),
        ),
        percentiles=_hist.percentile_points(histograms.latency),
        histogram=_hist.log_bins(histograms.latency),
        latency_histogram=histograms.latency,
    )
