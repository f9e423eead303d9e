"""Helpers for the asyncio connect path's tests: the ``run`` fixture (every test on asyncio's default
loop and on uvloop), a ``ConnectionUser`` standing in for the asyncio call, connectors, an HTTP exchange
over a found connection in raw bytes, small loopback servers on the test's own loop, and a count of this
process's sockets to a given address (to prove that nothing was left open).

Nothing here fakes the network: the connections are real sockets to real servers on loopback.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from fastnet._internal._async.exchange_finder import find_connection
from fastnet._internal._async.pool import AsyncConnectionPool
from fastnet._internal._sync.exchange_finder import find_connection as find_connection_sync
from fastnet._internal._sync.pool import RealConnectionPool
from fastnet._internal.connection.connection_user import ConnectionUser
from fastnet._internal.connection.connector import Connector
from fastnet._internal.connection.route_database import RouteDatabase
from fastnet._internal.connection.tls import default_ssl_context
from fastnet.exceptions import CanceledError
from fastnet.request import Request
from fastnet.url import URL
from tests.support.fakes import FakeDns

T = TypeVar("T")

__all__ = [
    "LOOPS",
    "Relay",
    "User",
    "client_sockets",
    "fetch",
    "find",
    "find_sync",
    "in_thread",
    "make_connector",
    "drain_until_eof",
    "run",
    "serve",
]

LOOPS = ["asyncio", "uvloop"]


@pytest.fixture(params=LOOPS)
def run(request: pytest.FixtureRequest) -> Iterator[Callable[[Callable[[], Awaitable[T]]], T]]:
    """``run(main)`` runs the coroutine function ``main`` on a new loop (asyncio's default loop, then
    uvloop) and fails the test when a task is still pending once it returned."""
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    else:
        factory = asyncio.new_event_loop

    def run_(main: Callable[[], Awaitable[T]]) -> T:
        async def checked() -> T:
            result = await main()
            # what closing transports scheduled (closing their sockets) runs in the next iterations
            for _ in range(3):
                await asyncio.sleep(0)
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            assert not pending, f"tasks left pending: {pending}"
            return result

        loop = factory()
        try:
            result = loop.run_until_complete(checked())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            # uvloop warns of a transport left open while it closes the loop, and hangs when the warning
            # is an error (as pytest's filterwarnings makes it): record the warnings, fail on them below
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                loop.close()
        left = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
        assert not left, f"left open when the loop closed: {left}"
        return result

    yield run_


class User(ConnectionUser):
    """The asyncio call as the connection layer sees it: the fields RealCall's ``_init_call`` sets, and
    ``release_connection``/``cancel`` as RealCall does them."""

    def __init__(self, pool: Any, events: Any = None, deadline: float = 0.0) -> None:
        self.pool = pool
        self.events = events
        self.canceled = False
        self.timed_out = False
        self.deadline = deadline
        self.max_body_size = 0
        self.connection = None
        self.reusable = False
        self.finder = None
        self.exchange = None
        self.last_failure = None
        self.retry_route = None
        self.started_at = 0.0
        self.queued = 0.0

    def canceled_error(self, request: Any) -> Any:
        return CanceledError("Canceled", url=request.url)

    def release_connection(self) -> None:
        conn = self.connection
        if conn is not None:
            self.connection = None
            reusable = self.reusable
            self.reusable = False
            if self.events is not None:
                self.events.connection_released(self, conn)
            self.pool.release(conn, reusable)

    def done(self, reusable: bool = True) -> None:
        """The exchange ended: give the connection back (to the pool when ``reusable``)."""
        self.reusable = reusable
        self.release_connection()

    def cancel(self) -> None:
        if self.canceled:
            return
        self.canceled = True
        if self.connection is not None:
            self.connection.shutdown()
        if self.finder is not None:
            self.finder.cancel()


def make_connector(
    *,
    pool: Any = None,
    max_per_host: int = 0,
    dns: Any = None,
    proxy: Any = None,
    ssl_context: ssl.SSLContext | None = None,
    proxy_authenticator: Any = None,
    happy_eyeballs: bool = True,
    blocking: bool = False,
) -> Connector:
    """A Connector over an ``AsyncConnectionPool`` (a ``RealConnectionPool`` with ``blocking=True``, for
    the blocking finder that the asyncio one is held against)."""
    if pool is None:
        pool = (RealConnectionPool if blocking else AsyncConnectionPool)(5, 300.0, max_per_host)
    return Connector(
        pool=pool,
        dns=FakeDns() if dns is None else dns,
        proxy=proxy,
        proxy_selector=None,
        route_database=RouteDatabase(),
        ssl_context=default_ssl_context() if ssl_context is None else ssl_context,
        proxy_authenticator=proxy_authenticator,
        fallback_to_direct=False,
        happy_eyeballs=happy_eyeballs,
        user_agent="fastnet-test",
        tls_sessions={},
    )


async def find(
    connector: Connector, user: User, url: str, connect_timeout: float = 5.0, read_timeout: float = 5.0
) -> Any:
    """The asyncio ``find_connection`` for a GET of ``url``."""
    return await find_connection(connector, user, Request("GET", url), connect_timeout, read_timeout)


def find_sync(connector: Connector, user: User, url: str, connect_timeout: float = 5.0) -> Any:
    """The blocking ``find_connection`` for a GET of ``url`` (run it with ``asyncio.to_thread``)."""
    return find_connection_sync(connector, user, Request("GET", url), connect_timeout, 5.0)


async def fetch(conn: Any, url: str, *, absolute: bool = False) -> tuple[int, bytes]:
    """One GET of ``url`` over ``conn`` (origin-form, or absolute-form for an HTTP proxy), written as raw
    bytes and read with the connection's parser: ``(status, body)``."""
    parsed = URL(url)
    target = url if absolute else (parsed.path or "/")
    conn.set_timeouts(5.0, 5.0)
    conn.write(
        f"GET {target} HTTP/1.1\r\nHost: {parsed.authority}\r\nUser-Agent: fastnet-test\r\n\r\n".encode()
    )
    parser = conn.parser
    while True:
        head = parser.read_head(False)
        if head is not None and head[0] >= 200:
            break
        if head is None and await conn.fill() == 0:
            raise ConnectionError("closed before the response head")
    parts = []
    while True:
        data = parser.read_body()
        if data is None:
            break
        if data:
            parts.append(data)
        elif await conn.fill() == 0:
            break
    conn.exchange_count += 1
    return head[0], b"".join(parts)


def _hex_address(host: str, port: int) -> str:
    """``host:port`` as /proc/net/tcp{,6} writes it."""
    if ":" in host:
        packed = socket.inet_pton(socket.AF_INET6, host)
        words = "".join(f"{word:08X}" for word in struct.unpack("<4I", packed))
        return f"{words}:{port:04X}"
    (word,) = struct.unpack("<I", socket.inet_aton(host))
    return f"{word:08X}:{port:04X}"


def client_sockets(host: str, port: int) -> int:
    """How many sockets of this process are connected (or connecting) to ``host:port``."""
    ours = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            ours.add(link[8:-1])
    remote = _hex_address(host, port)
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[2] == remote and fields[9] in ours:
                count += 1
    return count


class Served:
    """A loopback server on the test's loop, running ``handler(reader, writer)`` per connection, whose
    handlers are awaited on ``close()`` (so no task outlives the test)."""

    def __init__(self, server: asyncio.Server, handlers: list[asyncio.Task[None]]) -> None:
        self.server = server
        self.handlers = handlers
        sockname = server.sockets[0].getsockname()
        self.address: tuple[str, int] = (sockname[0], sockname[1])
        self.connections = 0

    async def close(self) -> None:
        self.server.close()
        await self.server.wait_closed()
        if self.handlers:
            await asyncio.wait(self.handlers, timeout=5)
        for task in self.handlers:
            assert task.done(), "a server handler did not end"
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]


async def serve(
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str = "127.0.0.1",
    ssl_context: ssl.SSLContext | None = None,
) -> Served:
    """Start a loopback server on the running loop (see ``Served``)."""
    handlers: list[asyncio.Task[None]] = []
    served: Served | None = None

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert served is not None
        served.connections += 1
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, ssl.SSLError):
            pass  # the client went away
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, host, 0, ssl=ssl_context)
    served = Served(server, handlers)
    return served


async def drain_until_eof(reader: asyncio.StreamReader) -> None:
    """Read and drop everything until the peer closes."""
    while await reader.read(65536):
        pass


class Relay:
    """An HTTPS proxy for the tests (TLS in TLS): TLS from the client ends here, with the testbed's
    certificate, and the bytes go on to ``upstream`` (squid), which does the proxying."""

    def __init__(self, upstream: tuple[str, int], cert_path: str, key_path: str) -> None:
        self.upstream = upstream
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert_path, key_path)
        self.served: Served | None = None

    async def start(self) -> tuple[str, int]:
        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)

            async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                try:
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                except (ConnectionError, ssl.SSLError):
                    pass
                finally:
                    dst.close()

            try:
                await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
            finally:
                up_writer.close()

        self.served = await serve(relay, ssl_context=self.context)
        return self.served.address

    async def close(self) -> None:
        if self.served is not None:
            await self.served.close()


def in_thread(function: Callable[..., T], *args: Any) -> Awaitable[T]:
    """``function(*args)`` on a worker thread (a blocking call the loop must not wait for inline)."""
    return asyncio.get_running_loop().run_in_executor(None, function, *args)
