"""``ConnectionPool``: idle keep-alive connections shared by a client and its siblings.

>>> pool = fastnet.ConnectionPool(max_idle_connections=10, keep_alive=60, max_connections_per_host=4)
>>> client = fastnet.Client(connection_pool=pool)
>>> pool.connection_count(), pool.idle_connection_count()

``max_idle_connections`` bounds idle connections (in-use ones are not limited, as in OkHttp);
``keep_alive`` is how long an idle connection may wait for reuse; ``max_connections_per_host`` caps
all connections (idle and in use) to one host: a call waits for a slot at most its connect timeout
(or its call timeout, if that ends sooner), then raises ``PoolTimeout``.

A pool serves blocking clients and ``AsyncClient`` alike; each kind has its own connections (an asyncio
connection belongs to its event loop) and applies the limits to its own; the counts add both.

Every client that uses a pool holds it open; when the last one is closed (``client.close()``) the pool
closes all its connections, in use or idle. ``pool.close()`` does that at once.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from fastnet._internal._sync.pool import RealConnectionPool

if TYPE_CHECKING:
    from fastnet._internal._async.pool import AsyncConnectionPool

__all__ = ["DEFAULT_MAX_IDLE", "ConnectionPool"]

#: Idle connections a pool keeps by default (OkHttp keeps 5): as many as ``map`` runs at once by default,
#: so a crawler or a load test at that width reuses its connections instead of reconnecting.
DEFAULT_MAX_IDLE = 32


class ConnectionPool:
    """The public face of the pool; the bookkeeping lives in the compiled ``RealConnectionPool`` (and, once
    an ``AsyncClient`` uses the pool, in its asyncio subclass ``AsyncConnectionPool``)."""

    def __init__(
        self,
        max_idle_connections: int = DEFAULT_MAX_IDLE,
        keep_alive: float = 300.0,
        max_connections_per_host: int | None = None,
    ) -> None:
        if isinstance(max_idle_connections, bool) or not isinstance(max_idle_connections, int):
            raise TypeError("max_idle_connections must be an int")
        if max_idle_connections < 0:
            raise ValueError(f"max_idle_connections must be >= 0, not {max_idle_connections}")
        if isinstance(keep_alive, bool) or not isinstance(keep_alive, (int, float)):
            raise TypeError("keep_alive must be a number of seconds")
        if not keep_alive > 0:
            raise ValueError(f"keep_alive must be > 0 seconds, not {keep_alive!r}")
        if max_connections_per_host is not None:
            if isinstance(max_connections_per_host, bool) or not isinstance(max_connections_per_host, int):
                raise TypeError("max_connections_per_host must be an int or None")
            if max_connections_per_host < 1:
                raise ValueError(f"max_connections_per_host must be >= 1, not {max_connections_per_host}")
        self.max_idle_connections = max_idle_connections
        self.keep_alive = float(keep_alive)
        self.max_connections_per_host = max_connections_per_host
        self._real = RealConnectionPool(
            max_idle_connections, float(keep_alive), max_connections_per_host or 0
        )
        self._async: AsyncConnectionPool | None = None
        self._users = 0
        self._users_lock = threading.Lock()

    def _asyncio_real(self) -> AsyncConnectionPool:
        """The asyncio half, made when the first ``AsyncClient`` uses this pool."""
        with self._users_lock:
            if self._async is None:
                from fastnet._internal._async.pool import AsyncConnectionPool

                self._async = AsyncConnectionPool(
                    self.max_idle_connections, self.keep_alive, self.max_connections_per_host or 0
                )
            return self._async

    def _halves(self) -> list[RealConnectionPool]:
        return [self._real] if self._async is None else [self._real, self._async]

    def connection_count(self) -> int:
        """Connections this pool holds, idle and in use."""
        return sum(int(real.connection_count()) for real in self._halves())

    def idle_connection_count(self) -> int:
        return sum(int(real.idle_connection_count()) for real in self._halves())

    def evict_all(self) -> None:
        """Close every idle connection now (in-use ones finish their calls first)."""
        for real in self._halves():
            real.evict_all()

    def cleanup(self) -> int:
        """Close idle connections older than ``keep_alive`` now; returns how many."""
        return sum(int(real.cleanup()) for real in self._halves())

    def close(self) -> None:
        """Close every connection now, idle and in use: a call still reading from one fails. The pool
        can be used again afterwards."""
        for real in self._halves():
            real.close_all()

    def _attach(self) -> None:
        """A client starts using this pool."""
        with self._users_lock:
            self._users += 1

    def _detach(self) -> None:
        """A client using this pool was closed; the last one closes every connection."""
        with self._users_lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.close()

    def __repr__(self) -> str:
        return (
            f"<ConnectionPool {self.connection_count()} connections, {self.idle_connection_count()} idle, "
            f"max_idle={self.max_idle_connections}, keep_alive={self.keep_alive}>"
        )

    def __reduce__(self) -> Any:  # pragma: no cover - pools hold sockets
        raise TypeError("ConnectionPool cannot be pickled")
