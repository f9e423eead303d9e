"""``EventListener``: per-phase events of a call, for metrics and tracing; ``LoggingEventListener``.

Subclass it and override what you need; every method does nothing by default. A client shares one
listener (``Client(event_listener=...)``) or makes one per call (``event_listener_factory=``). Methods run
on the thread doing the work (the caller's, or a dispatcher thread for an enqueued call), in OkHttp's
order, and must neither block nor raise. When no listener is configured, every event site is one check.

The order, for a plain GET on a new connection: ``call_start``, ``proxy_select_start``/``end``,
``dns_start``/``end``, ``connect_start``, (``secure_connect_start``/``end``), ``connect_end``,
``connection_acquired``, ``request_headers_start``/``end``, (``request_body_start``/``end``),
``response_headers_start``/``end``, ``follow_up_decision``, ``response_body_start``/``end`` (when the
body is read; a body known to be empty, as with ``Content-Length: 0``, HEAD, 204 or 304, ends before the
``follow_up_decision``, as in OkHttp), ``connection_released``, ``call_end``. A pooled connection skips
from ``call_start`` to ``connection_acquired``; a redirect on the same connection keeps it (no second
acquire); a failed exchange reports ``response_failed`` and ``retry_decision`` before
``connection_released``; an enqueued call that had to wait reports ``dispatcher_queue_start`` and
``dispatcher_queue_end``.

>>> class Timing(fastnet.EventListener):
...     def call_start(self, call): self.t0 = time.perf_counter()
...     def call_end(self, call): print(time.perf_counter() - self.t0)
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet.proxy import Proxy
    from fastnet.request import Request
    from fastnet.response import Response
    from fastnet.route import Route
    from fastnet.url import URL

__all__ = ["EventListener", "LoggingEventListener"]


class EventListener:
    """Receives the events of calls; all methods are no-ops meant to be overridden.

    ``call`` is the call the event belongs to: a ``fastnet.Call`` or ``AsyncCall`` (a connection that
    ``fastnet load`` sets up reports with a stand-in of its own). It is typed ``Any`` on purpose: an
    override may annotate it with the call type it receives, which any narrower type here would
    make an incompatible override."""

    def call_start(self, call: Any) -> None: ...
    def dispatcher_queue_start(self, call: Any) -> None: ...
    def dispatcher_queue_end(self, call: Any) -> None: ...
    def proxy_select_start(self, call: Any, url: URL | None) -> None: ...
    def proxy_select_end(self, call: Any, url: URL | None, proxies: list[Proxy]) -> None: ...
    def dns_start(self, call: Any, host: str) -> None: ...
    def dns_end(self, call: Any, host: str, addresses: list[str]) -> None: ...
    def connect_start(self, call: Any, route: Route) -> None: ...
    def secure_connect_start(self, call: Any) -> None: ...
    def secure_connect_end(self, call: Any, tls_version: str | None) -> None: ...
    def connect_end(self, call: Any, route: Route) -> None: ...
    def connect_failed(self, call: Any, route: Route, error: BaseException) -> None: ...
    def connection_acquired(self, call: Any, connection: RealConnection) -> None: ...
    def connection_released(self, call: Any, connection: RealConnection) -> None: ...
    def request_headers_start(self, call: Any) -> None: ...
    def request_headers_end(self, call: Any, request: Request) -> None: ...
    def request_body_start(self, call: Any) -> None: ...
    def request_body_end(self, call: Any, byte_count: int) -> None: ...
    def request_failed(self, call: Any, error: BaseException) -> None: ...
    def response_headers_start(self, call: Any) -> None: ...
    def response_headers_end(self, call: Any, response: Response) -> None: ...
    def response_body_start(self, call: Any) -> None: ...
    def response_body_end(self, call: Any, byte_count: int) -> None: ...
    def response_failed(self, call: Any, error: BaseException) -> None: ...
    def retry_decision(self, call: Any, error: BaseException, retry: bool) -> None: ...
    def follow_up_decision(self, call: Any, response: Response, next_request: Request | None) -> None: ...
    def call_end(self, call: Any) -> None: ...
    def call_failed(self, call: Any, error: BaseException) -> None: ...
    def canceled(self, call: Any) -> None: ...


class LoggingEventListener(EventListener):
    """Writes one line per event to the ``fastnet.events`` logger (at ``level``, DEBUG by default): the
    milliseconds since the call started, the call, the event and what it carries.

    >>> logging.basicConfig(level=logging.DEBUG)
    >>> client = fastnet.Client(event_listener=fastnet.LoggingEventListener())

    One listener serves any number of calls at once (each call's start time is kept apart).
    """

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.DEBUG) -> None:
        self.logger = logger or logging.getLogger("fastnet.events")
        self.level = level
        self._starts: weakref.WeakKeyDictionary[object, float] = weakref.WeakKeyDictionary()

    def _log(self, call: object, event: str, detail: str = "") -> None:
        if not self.logger.isEnabledFor(self.level):
            return
        now = time.perf_counter()
        try:
            start = self._starts.setdefault(call, now)
        except TypeError:  # not weak-referenceable: time from now on
            start = now
        self.logger.log(self.level, "%9.3f ms %r %s%s", (now - start) * 1000, call, event, detail)

    def call_start(self, call: object) -> None:
        self._log(call, "call start")

    def dispatcher_queue_start(self, call: object) -> None:
        self._log(call, "dispatcher queue start")

    def dispatcher_queue_end(self, call: object) -> None:
        self._log(call, "dispatcher queue end")

    def proxy_select_start(self, call: object, url: URL | None) -> None:
        self._log(call, "proxy select start")

    def proxy_select_end(self, call: object, url: URL | None, proxies: list[Proxy]) -> None:
        self._log(call, "proxy select end", f" {proxies}")

    def dns_start(self, call: object, host: str) -> None:
        self._log(call, "dns start", f" {host}")

    def dns_end(self, call: object, host: str, addresses: list[str]) -> None:
        self._log(call, "dns end", f" {host} -> {', '.join(map(str, addresses))}")

    def connect_start(self, call: object, route: Route) -> None:
        self._log(call, "connect start", f" {route}")

    def secure_connect_start(self, call: object) -> None:
        self._log(call, "secure connect start")

    def secure_connect_end(self, call: object, tls_version: str | None) -> None:
        self._log(call, "secure connect end", f" {tls_version}")

    def connect_end(self, call: object, route: Route) -> None:
        self._log(call, "connect end", f" {route}")

    def connect_failed(self, call: object, route: Route, error: BaseException) -> None:
        self._log(call, "connect failed", f" {route}: {error}")

    def connection_acquired(self, call: object, connection: RealConnection) -> None:
        self._log(call, "connection acquired", f" {connection}")

    def connection_released(self, call: object, connection: RealConnection) -> None:
        self._log(call, "connection released", f" {connection}")

    def request_headers_start(self, call: object) -> None:
        self._log(call, "request headers start")

    def request_headers_end(self, call: object, request: Request) -> None:
        self._log(call, "request headers end")

    def request_body_start(self, call: object) -> None:
        self._log(call, "request body start")

    def request_body_end(self, call: object, byte_count: int) -> None:
        self._log(call, "request body end", f" ({byte_count} bytes)")

    def request_failed(self, call: object, error: BaseException) -> None:
        self._log(call, "request failed", f": {error}")

    def response_headers_start(self, call: object) -> None:
        self._log(call, "response headers start")

    def response_headers_end(self, call: object, response: Response) -> None:
        self._log(call, "response headers end", f" {response.status_code} {response.reason}")

    def response_body_start(self, call: object) -> None:
        self._log(call, "response body start")

    def response_body_end(self, call: object, byte_count: int) -> None:
        self._log(call, "response body end", f" ({byte_count} bytes)")

    def response_failed(self, call: object, error: BaseException) -> None:
        self._log(call, "response failed", f": {error}")

    def retry_decision(self, call: object, error: BaseException, retry: bool) -> None:
        self._log(call, "retry decision", f" {'retry' if retry else 'give up'} after: {error}")

    def follow_up_decision(self, call: object, response: Response, next_request: Request | None) -> None:
        self._log(
            call, "follow-up decision", f" -> {next_request!r}" if next_request is not None else " none"
        )

    def call_end(self, call: object) -> None:
        self._log(call, "call end")

    def call_failed(self, call: object, error: BaseException) -> None:
        self._log(call, "call failed", f": {error}")

    def canceled(self, call: object) -> None:
        self._log(call, "canceled")
