"""The asyncio connect path (``async_exchange_finder``) against real servers on loopback: direct and IPv6
connects, DNS, Happy Eyeballs, timeouts, TLS, errors held against the blocking finder's, the pool's
reuse and the connection's fields. Every test runs on asyncio's default loop and on uvloop (``run``).


Cancelling the asyncio connect path in each phase (name lookup, TCP connect, SOCKS, CONNECT, TLS to a
proxy, TLS to the origin), by the call's ``cancel()`` and by ``task.cancel()``: the finder stops at once,
raises ``CanceledError`` (or lets ``CancelledError`` through), gives the host's slot back and leaves no
socket open and no task pending (``run`` checks the tasks). The servers are real ones on loopback that
stop answering at the phase under test; the test cancels once the server saw the phase begin."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest

from fastnet._internal._async.exchange_finder import AsyncExchangeFinder
from fastnet._internal._async.real_connection import AsyncRealConnection
from fastnet._internal._sync.exchange_finder import PROBE_IDLE_AFTER
from fastnet._internal.connection.tls import build_ssl_context
from fastnet.exceptions import (
    CanceledError,
    ConnectError,
    ConnectTimeout,
    TlsVerificationError,
    UnknownHostError,
)
from fastnet.proxy import Proxy
from fastnet.route import Route
from fastnet.testing import MockResponse, MockServer
from fastnet.url import URL
from tests.support.async_support import (
    Served,
    User,
    client_sockets,
    drain_until_eof,
    fetch,
    find,
    find_sync,
    in_thread,
    make_connector,
    serve,
)
from tests.support.clients import route_of
from tests.support.fakes import FakeDns, RecordingListener
from tests.support.testbed import Testbed


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback")


class Dns(FakeDns):
    """FakeDns with the Dns hooks the connector reports to."""

    def __init__(self, answers: dict[str, Iterable[str]] | None = None) -> None:
        super().__init__(answers)
        self.failed: list[tuple[str, str, str]] = []
        self.connects: list[tuple[str, str]] = []

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        self.failed.append((host, ip, type(error).__name__))

    def connected(self, host: str, ip: str) -> None:
        self.connects.append((host, ip))
        if host == "boom.test":
            raise RuntimeError("boom")


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------------------- direct


def test_async_finder_direct_connect_request_and_reuse(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"one"), MockResponse(200, body=b"two"))

    async def main() -> None:
        connector = make_connector()
        events = RecordingListener()
        user = User(connector.pool, events)
        conn = await find(connector, user, server.url("/a"))
        assert isinstance(conn, AsyncRealConnection) and user.connection is conn
        assert isinstance(user.finder, AsyncExchangeFinder)
        assert conn.remote_address == ("127.0.0.1", server.port)
        assert route_of(conn).socket_address == ("127.0.0.1", server.port)
        assert conn.connect_time > 0 and conn.dns_time >= 0 and conn.tls_time == 0
        assert not conn.is_tls and not conn.http_proxy and conn.pool is connector.pool
        assert connector.pool.connection_count() == 1
        assert await fetch(conn, server.url("/a")) == (200, b"one")
        user.done()
        assert connector.pool.idle_connection_count() == 1
        assert events.names() == [
            "proxy_select_start",
            "proxy_select_end",
            "connect_start",
            "connect_end",
            "connection_acquired",
            "connection_released",
        ]
        # the next call gets the pooled connection
        again = User(connector.pool, events)
        assert await find(connector, again, server.url("/b")) is conn
        assert await fetch(conn, server.url("/b")) == (200, b"two")
        again.done()
        connector.pool.close_all()

    run(main)
    assert [server.take_request().connection_index for _ in range(2)] == [0, 0]


def test_async_finder_same_events_as_the_blocking_finder(run: Any, server: MockServer) -> None:
    dns = FakeDns({"origin.test": ["127.0.0.1"]})
    url = server.url("/", host="origin.test")

    async def main() -> None:
        sync_events = RecordingListener()
        blocking = make_connector(dns=dns, blocking=True)
        sync_user = User(blocking.pool, sync_events)
        (await in_thread(find_sync, blocking, sync_user, url)).close()
        events = RecordingListener()
        connector = make_connector(dns=dns)
        user = User(connector.pool, events)
        conn = await find(connector, user, url)
        assert conn.dns_time > 0 and conn.connect_time > 0  # a lookup was made, and timed
        conn.close()
        assert events.names() == sync_events.names()
        assert events.names() == [
            "proxy_select_start",
            "proxy_select_end",
            "dns_start",
            "dns_end",
            "connect_start",
            "connect_end",
            "connection_acquired",
        ]
        assert events.events[3][1][1:] == ("origin.test", ["127.0.0.1"])

    run(main)


@needs_ipv6
def test_async_finder_ipv6(run: Any) -> None:
    with MockServer(host="::1") as v6:
        v6.enqueue(MockResponse(200, body=b"v6"))

        async def main() -> None:
            connector = make_connector()
            user = User(connector.pool)
            conn = await find(connector, user, v6.url("/"))
            assert conn.remote_address == ("::1", v6.port)
            assert await fetch(conn, v6.url("/")) == (200, b"v6")
            user.done(False)
            await asyncio.sleep(0)
            assert client_sockets("::1", v6.port) == 0

        run(main)


def test_async_finder_pooled_connection_closed_by_the_server_is_not_reused(
    run: Any, server: MockServer
) -> None:
    server.enqueue(
        MockResponse(200, headers={"Connection": "close"}, body=b"bye"), MockResponse(200, body=b"new")
    )

    async def main() -> None:
        connector = make_connector()
        user = User(connector.pool)
        conn = await find(connector, user, server.url("/"))
        assert await fetch(conn, server.url("/")) == (200, b"bye")
        assert await conn.fill() == 0  # the server closed: the end arrives while the connection is idle
        user.done(True)  # (as if the exchange had not seen it)
        assert connector.pool.idle_connection_count() == 1
        conn.idle_at -= PROBE_IDLE_AFTER + 1  # idle long enough to be probed before reuse
        again = User(connector.pool)
        fresh = await find(connector, again, server.url("/"))
        assert fresh is not conn and conn.closed
        assert await fetch(fresh, server.url("/")) == (200, b"new")
        again.done(False)

    run(main)


def test_async_finder_held_connection_for_a_same_address_follow_up(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"a"), MockResponse(200, body=b"b"), MockResponse(200, body=b"c"))

    async def main() -> None:
        events = RecordingListener()
        connector = make_connector(dns=FakeDns({"localhost": ["127.0.0.1"]}))
        user = User(connector.pool, events)
        conn = await find(connector, user, server.url("/a"))
        assert await fetch(conn, server.url("/a")) == (200, b"a")
        user.reusable = True  # the exchange ended cleanly: a redirect to the same address runs on it
        assert await find(connector, user, server.url("/b")) is conn
        assert not user.reusable
        assert events.names().count("connection_acquired") == 1
        assert await fetch(conn, server.url("/b")) == (200, b"b")
        user.reusable = True
        # a follow-up to another address gives the held connection back first
        other = await find(connector, user, server.url("/c", host="localhost"))
        assert other is not conn and user.connection is other
        assert events.names().count("connection_released") == 1
        assert connector.pool.idle_connection_count() == 1
        user.done(False)
        connector.pool.close_all()

    run(main)


def test_async_finder_call_canceled_as_it_connected(run: Any, server: MockServer) -> None:
    async def main() -> None:
        user: User

        class CancelAtEnd(RecordingListener):  # type: ignore[misc]
            def connect_end(self, call: Any, route: Any) -> None:
                super().connect_end(call, route)
                user.canceled = True  # the call was canceled just as its connection was made

        connector = make_connector()
        user = User(connector.pool, CancelAtEnd())
        conn = await find(connector, user, server.url("/"))
        assert conn.closed and user.connection is conn  # handed over shut down, as the blocking finder does
        user.done(False)

    run(main)


@needs_ipv6
def test_async_finder_interleaves_address_families(run: Any) -> None:
    with MockServer(host="::1") as v6:

        async def main() -> None:
            events = Timed()
            dns = FakeDns({"dual.test": ["127.0.0.4", "127.0.0.6", "::1", "127.0.0.7"]})
            connector = make_connector(dns=dns)
            user = User(connector.pool, events)
            conn = await find(connector, user, v6.url("/", host="dual.test"))
            assert conn.route.socket_address == ("::1", v6.port)
            assert [ip for _, ip in events.started] == ["127.0.0.4", "::1"]  # v4, v6, v4, v4 (RFC 8305 §4)
            finder = user.finder
            assert isinstance(finder, AsyncExchangeFinder)
            assert [r.socket_address[0] for r in finder.pending] == ["127.0.0.6", "127.0.0.7"]
            assert await finder.has_more_routes()
            user.done(False)

        run(main)


def test_async_finder_unknown_host(run: Any) -> None:
    async def main() -> None:
        connector = make_connector(dns=FakeDns())
        events = RecordingListener()
        with pytest.raises(UnknownHostError) as info:
            await find(connector, User(connector.pool, events), "http://nowhere.test:1/")
        assert info.value.phase == "dns"
        assert events.names() == ["proxy_select_start", "proxy_select_end", "dns_start"]
        assert connector.pool.connection_count() == 0

    run(main)


def test_async_finder_awaits_an_async_resolver(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"resolved"))

    class AsyncDns:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def lookup(self, host: str) -> list[str]:
            raise AssertionError("the asyncio finder must not call the blocking lookup")

        async def alookup(self, host: str) -> list[str]:
            self.asked.append(host)
            await asyncio.sleep(0)
            return ["127.0.0.1"]

    async def main() -> None:
        dns = AsyncDns()
        connector = make_connector(dns=dns)
        user = User(connector.pool)
        conn = await find(connector, user, server.url("/", host="async.test"))
        assert await fetch(conn, server.url("/")) == (200, b"resolved")
        assert dns.asked == ["async.test"]
        user.done(False)

    run(main)


# --------------------------------------------------------------------------------------- failures


async def both_errors(url: str, **options: Any) -> tuple[BaseException, BaseException]:
    """The error of the asyncio finder and of the blocking one for ``url``, same options."""
    connect_timeout = options.pop("connect_timeout", 5.0)
    connector = make_connector(**options)
    with pytest.raises(Exception) as info:
        await find(connector, User(connector.pool), url, connect_timeout)
    assert connector.pool.connection_count() == 0
    blocking = make_connector(blocking=True, **options)

    def sync() -> BaseException:
        try:
            find_sync(blocking, User(blocking.pool), url, connect_timeout)
        except Exception as exc:
            return exc
        raise AssertionError("the blocking finder connected")

    return info.value, await in_thread(sync)


def test_async_finder_refused_is_the_blocking_finders_error(run: Any) -> None:
    port = refused_port()

    async def main() -> None:
        error, sync = await both_errors(f"http://127.0.0.1:{port}/")
        assert type(error) is type(sync) is ConnectError
        assert str(error) == str(sync) == f"Failed to connect to 127.0.0.1:{port}: Connection refused"
        assert [type(e) for _, e in error.attempts] == [ConnectionRefusedError]
        # every route refused: one summary naming them all
        dns = FakeDns({"many.test": ["127.0.0.4", "127.0.0.6", "127.0.0.7"]})
        error, sync = await both_errors(f"http://many.test:{port}/", dns=dns)
        assert str(error) == str(sync) and isinstance(error, ConnectError)
        assert str(error).startswith(f"Failed to connect to many.test:{port}: all 3 routes failed [tried ")
        assert [r.socket_address[0] for r, _ in error.attempts] == ["127.0.0.4", "127.0.0.6", "127.0.0.7"]

    run(main)


def test_async_finder_refused_first_then_the_next_route(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"second"))

    async def main() -> None:
        dns = Dns({"fo.test": ["127.0.0.4", "127.0.0.1"]})
        events = RecordingListener()
        connector = make_connector(dns=dns, happy_eyeballs=False)
        user = User(connector.pool, events)
        conn = await find(connector, user, server.url("/", host="fo.test"))
        assert conn.route.socket_address == ("127.0.0.1", server.port)
        assert await fetch(conn, server.url("/")) == (200, b"second")
        user.done(False)
        started = [args[1].socket_address[0] for name, args in events.events if name == "connect_start"]
        assert started == ["127.0.0.4", "127.0.0.1"]
        failed = [
            (args[1].socket_address[0], type(args[2]))
            for name, args in events.events
            if name == "connect_failed"
        ]
        assert failed == [("127.0.0.4", ConnectionRefusedError)]
        assert [r.socket_address[0] for r in connector.route_database.failed_routes()] == ["127.0.0.4"]
        assert dns.failed == [("fo.test", "127.0.0.4", "ConnectionRefusedError")]
        assert dns.connects == [("fo.test", "127.0.0.1")]
        finder = user.finder
        assert isinstance(finder, AsyncExchangeFinder)
        assert {r.socket_address[0] for r in finder.tried} == {"127.0.0.4", "127.0.0.1"}
        assert finder.pending == [] and not await finder.has_more_routes()

    run(main)


def test_async_finder_bookkeeping_failure_closes_the_connection(run: Any, server: MockServer) -> None:
    async def main() -> None:
        connector = make_connector(dns=Dns({"boom.test": ["127.0.0.1"]}))
        with pytest.raises(RuntimeError, match="boom"):
            await find(connector, User(connector.pool), server.url("/", host="boom.test"))
        await asyncio.sleep(0)
        assert client_sockets("127.0.0.1", server.port) == 0
        assert connector.pool.connection_count() == 0

    run(main)


def test_async_finder_retry_route_goes_first(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200))

    async def main() -> None:
        dns = Dns({"retry.test": ["127.0.0.4"]})  # a fresh lookup would only give a refused address
        connector = make_connector(dns=dns)
        user = User(connector.pool)
        address = connector.address_of(URL(server.url("/", host="retry.test")), None)
        user.retry_route = Route(address, Proxy.NO_PROXY, ("127.0.0.1", server.port))
        conn = await find(connector, user, server.url("/", host="retry.test"))
        assert conn.route.socket_address == ("127.0.0.1", server.port)
        assert dns.lookups == [] and user.retry_route is None
        user.done(False)

    run(main)


def test_async_finder_tls_verification_failure_is_the_blocking_finders(
    run: Any, tls_server: MockServer
) -> None:
    async def main() -> None:
        events = RecordingListener()
        connector = make_connector()  # certifi's bundle: the test CA is unknown
        with pytest.raises(TlsVerificationError) as info:
            await find(connector, User(connector.pool, events), tls_server.url("/"))
        _, sync = await both_errors(tls_server.url("/"))
        assert str(info.value) == str(sync)
        assert str(info.value).startswith("certificate verification failed for 127.0.0.1:")
        assert info.value.phase == "tls"
        assert events.names()[-2:] == ["secure_connect_start", "connect_failed"]
        await asyncio.sleep(0)
        assert client_sockets("127.0.0.1", tls_server.port) == 0

    run(main)
    assert tls_server.request_count == 0


def test_async_finder_hostname_mismatch(run: Any, tls_server: MockServer) -> None:
    dns = FakeDns({"wrong-name.invalid": ["127.0.0.1"]})

    async def main() -> None:
        assert tls_server.ca_path is not None
        context = build_ssl_context(tls_server.ca_path)
        error, sync = await both_errors(
            tls_server.url("/", host="wrong-name.invalid"), dns=dns, ssl_context=context
        )
        assert isinstance(error, TlsVerificationError)
        assert str(error) == str(sync) and "wrong-name.invalid" in str(error)
        assert "Hostname mismatch" in str(error)

    run(main)


def test_async_finder_tls_origin(run: Any, tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"secure"))

    async def main() -> None:
        events = RecordingListener()
        connector = make_connector(ssl_context=tls_server.client_ssl_context())
        user = User(connector.pool, events)
        conn = await find(connector, user, tls_server.url("/s"))
        assert conn.is_tls and conn.tls_version in ("TLSv1.2", "TLSv1.3")
        assert conn.tls_time > 0 and conn.connect_time > 0
        assert await fetch(conn, tls_server.url("/s")) == (200, b"secure")
        assert conn.gives_tls_session and not connector.tls_sessions  # read when the pool gets it back
        user.done(False)
        assert ("127.0.0.1", tls_server.port) in connector.tls_sessions  # for the next connection
        names = events.names()
        assert names == [
            "proxy_select_start",
            "proxy_select_end",
            "connect_start",
            "secure_connect_start",
            "secure_connect_end",
            "connect_end",
            "connection_acquired",
            "connection_released",
        ]
        assert events.events[4][1][1] == conn.tls_version

    run(main)
    assert tls_server.take_request().tls


# --------------------------------------------------------------------------------------- timeouts


def test_async_finder_connect_timeout(run: Any, testbed: Testbed) -> None:
    if not testbed.blackhole_available:
        pytest.skip("nft blackhole not available")
    url = f"http://{testbed.blackhole_host}:{testbed.http_port}/"

    async def main() -> None:
        error, sync = await both_errors(url, connect_timeout=0.3)
        assert isinstance(error, ConnectTimeout) and error.phase == "connect"
        assert str(error) == str(sync)
        assert (
            error.message == f"Connect to {testbed.blackhole_host}:{testbed.http_port} timed out after 0.3 s"
        )
        assert client_sockets(testbed.blackhole_host, testbed.http_port) == 0

    run(main)


# --------------------------------------------------------------------------------------- Happy Eyeballs


class Timed(RecordingListener):  # type: ignore[misc]
    """Records when each connect attempt started."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[tuple[float, str]] = []

    def connect_start(self, call: Any, route: Any) -> None:
        super().connect_start(call, route)
        self.started.append((time.monotonic(), route.socket_address[0]))


def blackhole_of(testbed: Testbed) -> str:
    if not testbed.blackhole_available:
        pytest.skip("nft blackhole not available")
    return str(testbed.blackhole_host)


def test_async_finder_happy_eyeballs_overtakes_a_blackhole(run: Any, testbed: Testbed) -> None:
    hole = blackhole_of(testbed)
    port = testbed.http_port

    async def main() -> None:
        dns = Dns({"he.test": [hole, "127.0.0.1"]})
        events = Timed()
        connector = make_connector(dns=dns)
        user = User(connector.pool, events)
        conn = await find(connector, user, f"http://he.test:{port}/whoami", connect_timeout=10.0)
        assert conn.route.socket_address == ("127.0.0.1", port)
        # the loser was cancelled and its socket closed before find() returned
        assert client_sockets(hole, port) == 0
        status, body = await fetch(conn, f"http://he.test:{port}/whoami")
        assert status == 200 and b"addr=127.0.0.1" in body
        user.done(False)
        assert [ip for _, ip in events.started] == [hole, "127.0.0.1"]
        # the second attempt started after the stagger delay (250 ms), not at once and not after the 10 s
        # connect timeout (loose bounds: only the order of magnitude is the behaviour under test)
        gap = events.started[1][0] - events.started[0][0]
        assert 0.15 <= gap < 9.0
        # overtaken, not failed: no connect_failed, no failed route, but the Dns hears of it
        assert "connect_failed" not in events.names()
        assert connector.route_database.failed_routes() == []
        assert dns.failed == [("he.test", hole, "ConnectTimeout")]
        assert dns.connects == [("he.test", "127.0.0.1")]

    run(main)


def test_async_finder_sequential_without_happy_eyeballs(run: Any, testbed: Testbed) -> None:
    hole = blackhole_of(testbed)
    port = testbed.http_port

    async def main() -> None:
        events = Timed()
        connector = make_connector(dns=Dns({"seq.test": [hole, "127.0.0.1"]}), happy_eyeballs=False)
        user = User(connector.pool, events)
        conn = await find(connector, user, f"http://seq.test:{port}/", connect_timeout=0.3)
        assert conn.route.socket_address == ("127.0.0.1", port)
        conn.close()
        assert [ip for _, ip in events.started] == [hole, "127.0.0.1"]
        assert events.started[1][0] - events.started[0][0] >= 0.2  # it waited for the 0.3 s timeout
        (failed,) = [args for name, args in events.events if name == "connect_failed"]
        assert isinstance(failed[2], ConnectTimeout)
        assert failed[2].message == f"Connect to {hole}:{port} timed out after 0.3 s"
        assert [r.socket_address[0] for r in connector.route_database.failed_routes()] == [hole]
        assert client_sockets(hole, port) == 0

    run(main)


def test_async_finder_every_route_times_out(run: Any, testbed: Testbed) -> None:
    hole = blackhole_of(testbed)

    async def main() -> None:
        # the blackhole port drops SYNs on every loopback address: two routes that both time out
        dns = FakeDns({"holes.test": ["127.0.0.1", hole]})
        url = f"http://holes.test:{testbed.blackhole_port}/"
        error, sync = await both_errors(url, dns=dns, connect_timeout=0.3)
        assert isinstance(error, ConnectTimeout) and str(error) == str(sync)
        assert error.message.startswith(f"connect to holes.test:{testbed.blackhole_port} timed out [tried ")
        assert client_sockets(hole, testbed.blackhole_port) == 0
        assert client_sockets("127.0.0.1", testbed.blackhole_port) == 0

    run(main)


@pytest.mark.parametrize("phase", ["socks", "connect", "tls"])
def test_async_finder_handshake_timeouts_are_the_blocking_finders(run: Any, phase: str) -> None:
    first = {"socks": 3, "connect": 1, "tls": 5}[phase]

    async def main() -> None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readexactly(first)
            await drain_until_eof(reader)

        server = await serve(silent)
        try:
            host, port = server.address
            if phase == "socks":
                options: dict[str, Any] = {"proxy": Proxy.socks(host, port)}
                url = "http://127.0.0.2:8080/"
            elif phase == "connect":
                options = {"proxy": Proxy.http(host, port)}
                url = "https://127.0.0.2:4443/"
            else:
                options = {}
                url = f"https://{host}:{port}/"
            started = time.monotonic()
            error, sync = await both_errors(url, connect_timeout=0.3, **options)
            assert time.monotonic() - started >= 0.55  # each waited for its handshake timeout
            assert type(error) is type(sync) and str(error) == str(sync)
            expected = {
                "socks": "did not complete the handshake in time (target 127.0.0.2:8080)",
                "connect": "did not answer CONNECT in time",
                "tls": f"TLS handshake with {host}:{port} timed out",
            }[phase]
            assert expected in str(error)
            await asyncio.sleep(0)
            assert client_sockets(host, port) == 0
        finally:
            await server.close()

    run(main)


# --------------------------------------------------------------------------- asyncio: cancellation


HOW = ["cancel", "task"]


async def cancel_when(
    how: str,
    reached: asyncio.Event,
    connector: Any,
    url: str,
    events: Any = None,
    connect_timeout: float = 30.0,
) -> None:
    """Run a find for ``url``; once ``reached`` is set, cancel it (``user.cancel()`` or ``task.cancel()``)
    and check that it ended as a cancel does, with the slot given back."""
    user = User(connector.pool, events)
    task = asyncio.ensure_future(find(connector, user, url, connect_timeout, 30.0))
    waiting = asyncio.ensure_future(reached.wait())
    try:
        done, _ = await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if task.done():
        task.result()  # raises what ended it
        raise AssertionError("the find connected before the phase was reached")
    assert not task.done()
    if how == "cancel":
        user.cancel()
        with pytest.raises(CanceledError) as info:
            await task
        assert info.value.message == "Canceled" or "Canceled" in info.value.message
    else:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert connector.pool.connection_count() == 0
    await asyncio.sleep(0)  # transports aborted by the cancel close their sockets in the next iteration


async def silent_after(
    first: Callable[[asyncio.StreamReader], Awaitable[Any]],
) -> tuple[Served, asyncio.Event]:
    """A server that runs ``first(reader)`` (read what the phase sends), says so, then never answers."""
    reached = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await first(reader)
        reached.set()
        await drain_until_eof(reader)

    return await serve(handler), reached


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_tcp_connect(run: Any, testbed: Testbed, how: str) -> None:
    if not testbed.blackhole_available:
        pytest.skip("nft blackhole not available")
    hole, port = testbed.blackhole_host, testbed.http_port

    async def main() -> None:
        reached = asyncio.Event()

        class Started(RecordingListener):  # type: ignore[misc]
            def connect_start(self, call: Any, route: Any) -> None:
                reached.set()

        connector = make_connector()
        await cancel_when(how, reached, connector, f"http://{hole}:{port}/", Started())
        assert client_sockets(hole, port) == 0
        assert connector.route_database.failed_routes() == []  # a cancel is no route failure

    run(main)


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_name_lookup(run: Any, how: str) -> None:
    async def main() -> None:
        reached = asyncio.Event()
        never: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()

        class StuckDns:
            def lookup(self, host: str) -> list[str]:
                raise AssertionError("the asyncio finder must not call the blocking lookup")

            async def alookup(self, host: str) -> list[str]:
                reached.set()
                return await never

        connector = make_connector(dns=StuckDns())
        await cancel_when(how, reached, connector, "http://stuck.test:80/")
        assert never.cancelled()

    run(main)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("version", [5, 4])
def test_async_cancel_during_socks_handshake(run: Any, how: str, version: int) -> None:
    async def main() -> None:
        server, reached = await silent_after(lambda reader: reader.readexactly(3 if version == 5 else 9))
        try:
            proxy = Proxy.socks(*server.address, version=version)
            connector = make_connector(proxy=proxy)
            await cancel_when(how, reached, connector, "http://127.0.0.2:8080/")
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_connect_tunnel(run: Any, how: str) -> None:
    async def main() -> None:
        server, reached = await silent_after(lambda reader: reader.readuntil(b"\r\n\r\n"))
        try:
            connector = make_connector(proxy=Proxy.http(*server.address))
            await cancel_when(how, reached, connector, "https://127.0.0.2:4443/")
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("to", ["origin", "proxy"])
def test_async_cancel_during_tls_handshake(run: Any, how: str, to: str) -> None:
    async def main() -> None:
        # a TLS server that reads the ClientHello's record header and says nothing
        server, reached = await silent_after(lambda reader: reader.readexactly(5))
        try:
            if to == "origin":
                connector = make_connector()
                url = f"https://{server.address[0]}:{server.address[1]}/"
            else:
                connector = make_connector(proxy=Proxy.https(*server.address))
                url = "http://127.0.0.2:8080/"
            events = RecordingListener()
            await cancel_when(how, reached, connector, url, events)
            assert "secure_connect_start" in events.names()
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


def test_async_cancel_before_the_find_starts(run: Any) -> None:
    async def main() -> None:
        connector = make_connector()
        user = User(connector.pool)
        user.cancel()
        with pytest.raises(CanceledError):
            await find(connector, user, "http://127.0.0.1:9/")
        assert connector.pool.connection_count() == 0

    run(main)
