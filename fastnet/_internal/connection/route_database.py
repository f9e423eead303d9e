"""``RouteDatabase``: the routes that failed recently, which route selection tries last.

Compiled in place, typed by its ``.pxd``, in the compiled build. Every connect failure is recorded here: TCP
connects, TLS handshakes and a fresh connection's first exchange (OkHttp records only the last); a success
removes the route again.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastnet.route import Route

__all__ = ["RouteDatabase"]


class RouteDatabase:
    """The set of recently failed routes, which route selection postpones (tries last).

    ``failed(route)`` adds, ``connected(route)`` removes, ``should_postpone(route)`` tests. Thread-safe:
    writers hold a lock; the membership test is a single dict lookup, atomic under the GIL. The set
    is bounded (oldest failures are forgotten first) so a long crawl cannot grow it without limit.

    >>> from fastnet.route import Address, Route
    >>> from fastnet.proxy import Proxy
    >>> db = RouteDatabase()
    >>> r = Route(Address("http", "example.com", 80), Proxy.NO_PROXY, ("127.0.0.1", 80))
    >>> db.failed(r); db.should_postpone(r)
    True
    >>> db.connected(r); db.should_postpone(r)
    False
    """

    __slots__ = ("_failed", "_lock", "max_size")

    def __init__(self, max_size: int = 8192) -> None:
        if max_size < 1:
            raise ValueError("RouteDatabase max_size must be at least 1")
        self._failed: dict[Route, None] = {}
        self._lock = threading.Lock()
        self.max_size = max_size

    def failed(self, route: Route) -> None:
        with self._lock:
            failed = self._failed
            if route in failed:
                # refresh: a route that fails again is the most recent failure
                del failed[route]
            elif len(failed) >= self.max_size:
                del failed[next(iter(failed))]
            failed[route] = None

    def connected(self, route: Route) -> None:
        with self._lock:
            self._failed.pop(route, None)

    def should_postpone(self, route: Route) -> bool:
        return route in self._failed

    def clear(self) -> None:
        with self._lock:
            self._failed.clear()

    def failed_routes(self) -> list[Route]:
        """The failed routes, oldest first (a copy)."""
        with self._lock:
            return list(self._failed)

    def __len__(self) -> int:
        return len(self._failed)

    def __repr__(self) -> str:
        return f"<RouteDatabase {len(self._failed)} failed routes>"
