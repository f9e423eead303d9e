"""The connection pool through the real client: reuse order, limits, expiry, when a connection goes
back to the pool and when it is closed, the idle health probe and the per-host connection limit.

``AsyncConnectionPool`` under ``max_connections_per_host``: FIFO waiters woken one per freed slot, a
newcomer queued behind them, ``PoolTimeout`` with the blocking pool's message, cancelled waiters (a woken
one passes its wake on), wakes from another thread, 500 calls through 4 slots; and the base pool's
non-blocking steps (``slot_state``, ``try_reserve``) and its ``slot_freed`` hook in both twins. The asyncio
tests run on both loops against ``MockServer``."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet._internal._async.pool import AsyncConnectionPool
from fastnet._internal._sync.real_connection import RealConnection
from fastnet.exceptions import PoolTimeout
from fastnet.route import Address
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from fastnet.url import URL
from tests.support.async_support import User, fetch, find, make_connector
from tests.support.clients import make_fast_client


def _connection_indexes(server: MockServer, n: int) -> list[int]:
    return [server.take_request().connection_index for _ in range(n)]


@pytest.mark.both_clients
def test_pool_keep_alive_reuse(server: MockServer) -> None:
    for _ in range(5):
        server.enqueue(MockResponse(200, body=b"x"))
    with make_fast_client() as client:
        for _ in range(5):
            assert client.get(server.url("/")).content == b"x"
        assert client.connection_pool.connection_count() == 1
        assert client.connection_pool.idle_connection_count() == 1
    assert _connection_indexes(server, 5) == [0] * 5
    assert server.connection_count == 1


@pytest.mark.both_clients
def test_pool_most_recently_used_first(server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    with make_fast_client() as client:
        a = client.stream("GET", server.url("/a"))
        b = client.stream("GET", server.url("/b"))
        first = _connection_indexes(server, 2)
        assert sorted(first) == [0, 1]
        a.close()
        b.close()  # b's connection went idle last: it is reused first
        client.get(server.url("/c"))
        assert client.connection_pool.idle_connection_count() == 2
    assert server.take_request().connection_index == first[1]


@pytest.mark.both_clients
def test_pool_max_idle_connections(server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    pool = fastnet.ConnectionPool(max_idle_connections=1)
    with make_fast_client(connection_pool=pool) as client:
        streams = [client.stream("GET", server.url("/")) for _ in range(3)]
        assert pool.connection_count() == 3 and pool.idle_connection_count() == 0
        for r in streams:
            r.read()
        assert pool.connection_count() == 1 and pool.idle_connection_count() == 1


@pytest.mark.both_clients
def test_pool_max_idle_zero_never_pools(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    pool = fastnet.ConnectionPool(max_idle_connections=0)
    with make_fast_client(connection_pool=pool) as client:
        client.get(server.url("/"))
        client.get(server.url("/"))
        assert pool.connection_count() == 0
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_keep_alive_expiry(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200), MockResponse(200))
    pool = fastnet.ConnectionPool(keep_alive=0.2)
    with make_fast_client(connection_pool=pool) as client:
        client.get(server.url("/"))
        assert pool.idle_connection_count() == 1
        time.sleep(0.3)
        assert pool.cleanup() == 1
        assert pool.connection_count() == 0
        client.get(server.url("/"))
        time.sleep(0.3)
        client.get(server.url("/"))  # the expired idle connection is not reused
    assert _connection_indexes(server, 3) == [0, 1, 2]


@pytest.mark.both_clients
def test_pool_streamed_body_not_pooled_until_read(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 10_000))
    with make_fast_client() as client:
        r = client.stream("GET", server.url("/"))
        assert client.connection_pool.idle_connection_count() == 0
        assert len(r.read()) == 10_000
        assert client.connection_pool.idle_connection_count() == 1
        r.close()
        assert client.connection_pool.idle_connection_count() == 1


@pytest.mark.both_clients
def test_pool_early_close_drains_fast_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"y" * 50_000), MockResponse(200, body=b"next"))
    with make_fast_client() as client:
        with client.stream("GET", server.url("/")) as r:
            assert r.status_code == 200  # body never read
        assert client.connection_pool.idle_connection_count() == 1
        assert client.get(server.url("/")).content == b"next"
    assert _connection_indexes(server, 2) == [0, 0]


@pytest.mark.both_clients
def test_pool_early_close_of_slow_body_closes_connection(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"z" * 400, throttle=(10, 0.05)), MockResponse(200))
    with make_fast_client() as client:
        r = client.stream("GET", server.url("/"))
        started = time.monotonic()
        r.close()
        assert time.monotonic() - started < 2.0  # drained for at most ~100 ms, not for 2 s
        assert client.connection_pool.connection_count() == 0
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_early_close_chunked(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"c" * 30_000, chunked=True, chunk_size=1000), MockResponse(200))
    with make_fast_client() as client:
        client.stream("GET", server.url("/")).close()
        assert client.connection_pool.idle_connection_count() == 1
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 0]


@pytest.mark.both_clients
def test_pool_read_until_close_body_never_pooled(server: MockServer) -> None:
    raw = b"HTTP/1.1 200 OK\r\n\r\nuntil close"
    server.enqueue(MockResponse(raw=raw, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"until close"
        assert client.connection_pool.connection_count() == 0


@pytest.mark.both_clients
def test_pool_response_connection_close_honoured(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Connection": "close"}, body=b"bye"), MockResponse(200))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"bye"
        assert client.connection_pool.connection_count() == 0
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_request_connection_close_honoured(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client() as client:
        client.get(server.url("/"), headers={"Connection": "close"})
        assert client.connection_pool.connection_count() == 0
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_http10_without_keep_alive_not_pooled(server: MockServer) -> None:
    server.enqueue(
        MockResponse(200, http_version="HTTP/1.0", body=b"old", policy=SocketPolicy.CLOSE_AFTER_RESPONSE)
    )
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"old"
        assert client.connection_pool.connection_count() == 0


@pytest.mark.both_clients
def test_pool_peer_closed_while_idle_is_detected(server: MockServer) -> None:
    # the server closes after the response without saying so; after more than a second idle the
    # client probes the pooled socket before reuse, sees EOF and opens a new connection instead
    server.enqueue(
        MockResponse(200, body=b"1", policy=SocketPolicy.CLOSE_AFTER_RESPONSE), MockResponse(200, body=b"2")
    )
    with make_fast_client(retry_on_connection_failure=False) as client:
        assert client.get(server.url("/")).content == b"1"
        assert client.connection_pool.idle_connection_count() == 1
        time.sleep(1.2)
        assert client.get(server.url("/")).content == b"2"
        assert client.connection_pool.connection_count() == 1
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_stale_connection_retried_on_fresh_one(server: MockServer) -> None:
    # reused 50 ms later: the probe before reuse sees the close (or, were the FIN late, the stale socket
    # fails and the call is retried once); either way the second request goes out on a new connection
    server.enqueue(
        MockResponse(200, body=b"1", policy=SocketPolicy.CLOSE_AFTER_RESPONSE), MockResponse(200, body=b"2")
    )
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"1"
        time.sleep(0.05)
        assert client.get(server.url("/")).content == b"2"
    assert _connection_indexes(server, 2) == [0, 1]


@pytest.mark.both_clients
def test_pool_max_connections_per_host_waits_for_a_slot(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"first"), MockResponse(200, body=b"second"))
    with make_fast_client(max_connections_per_host=1) as client:
        held = client.stream("GET", server.url("/"))
        result: list[Any] = []

        def second() -> None:
            try:
                result.append(client.get(server.url("/")).content)
            except BaseException as exc:  # noqa: BLE001 - reported below
                result.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        try:
            thread.join(0.3)
            assert thread.is_alive() and result == []  # waiting for the slot, not connecting
            assert server.connection_count == 1
            assert held.read() == b"first"
            held.close()
        finally:
            thread.join(5)
        assert result == [b"second"]
        assert client.connection_pool.connection_count() == 1
    assert server.connection_count == 1


@pytest.mark.both_clients
def test_pool_max_connections_per_host_pool_timeout(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"held"))
    with make_fast_client(max_connections_per_host=1) as client:
        with client.stream("GET", server.url("/")) as held:
            hurried = client.with_options(call_timeout=0.3)
            assert hurried.connection_pool is client.connection_pool
            with pytest.raises(fastnet.PoolTimeout) as info:
                hurried.get(server.url("/"))
            assert isinstance(info.value, TimeoutError) and isinstance(info.value, fastnet.TimeoutError)
            assert info.value.url is not None
            held.read()
    assert server.connection_count == 1


@pytest.mark.both_clients
def test_pool_per_host_slot_freed_after_failure(server: MockServer) -> None:
    server.enqueue(MockResponse(raw=b"nonsense\r\n\r\n"), MockResponse(200, body=b"ok"))
    with make_fast_client(max_connections_per_host=1, call_timeout=5) as client:
        with pytest.raises(fastnet.ProtocolError):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
        assert client.get(server.url("/")).content == b"ok"


@pytest.mark.both_clients
def test_pool_per_host_idle_connection_evicted_for_new_route(server: MockServer) -> None:
    # at the limit with only an idle connection (to another address of the same host), the idle one
    # is closed to make room rather than waiting
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(max_connections_per_host=1, call_timeout=2) as client:
        client.get(server.url("/"))
        assert client.connection_pool.idle_connection_count() == 1
        client.get(server.url("/"), headers={"Connection": "close"})
        assert client.connection_pool.connection_count() == 0


# -- abandoned responses, bounded waits, closing ----------------------------------------------------


@pytest.mark.both_clients
def test_pool_collected_stream_gives_its_connection_back(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x" * 200_000)
    pool = fastnet.ConnectionPool(max_connections_per_host=1)
    with make_fast_client(connection_pool=pool) as client:
        r = client.stream("GET", server.url("/"))
        assert pool.connection_count() == 1
        del r  # never read, never closed
        gc.collect()
        assert pool.connection_count() == 0  # closed (nobody read the rest), its slot free again
        assert client.get(server.url("/")).status_code == 200


def _waiting_for_a_slot(pool: fastnet.ConnectionPool) -> int:
    """Calls waiting for a per-host slot: threads in the blocking half, tasks in the asyncio half."""
    waiting = int(pool._real.sleepers)
    if pool._async is not None:
        waiting += sum(w.parked for w in list(pool._async.waiters.values()))
    return waiting


@pytest.mark.both_clients
def test_pool_collected_stream_wakes_the_call_waiting_for_its_slot(server: MockServer) -> None:
    # the slot is freed by the finalizer of a response nobody closed, while the next call waits for it
    server.default_response = MockResponse(200, body=b"x" * 200_000)
    pool = fastnet.ConnectionPool(max_connections_per_host=1)
    with make_fast_client(connection_pool=pool, call_timeout=5) as client:
        held = client.stream("GET", server.url("/"))
        result: list[Any] = []

        def second() -> None:
            try:
                result.append(client.get(server.url("/")).status_code)
            except BaseException as exc:  # noqa: BLE001 - reported below
                result.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        try:
            for _ in range(500):  # until it waits for the slot (5 s at most)
                if _waiting_for_a_slot(pool):
                    break
                time.sleep(0.01)
            assert _waiting_for_a_slot(pool) == 1
            del held  # never read, never closed
            gc.collect()
        finally:
            thread.join(10)
        assert result == [200]  # at once: before, it waited out its call timeout


@pytest.mark.both_clients
def test_pool_wait_for_a_slot_is_bounded_by_the_connect_timeout(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x" * 200_000)
    pool = fastnet.ConnectionPool(max_connections_per_host=1)
    with make_fast_client(connection_pool=pool, connect_timeout=0.5) as client:
        held = client.stream("GET", server.url("/"))
        started = time.monotonic()
        with pytest.raises(fastnet.PoolTimeout, match="max_connections_per_host"):
            client.get(server.url("/"))
        assert 0.4 < time.monotonic() - started < 5
        held.close()
        assert client.get(server.url("/")).status_code == 200


# --------------------------------------------------------------------------- asyncio: AsyncConnectionPool


@pytest.fixture
def ok_server() -> Iterator[MockServer]:
    with MockServer() as s:
        s.default_response = MockResponse(200, body=b"ok")
        yield s


async def take(connector: Any, url: str, order: list[int], index: int, connect_timeout: float = 5.0) -> Any:
    """A call that finds a connection, notes its turn, makes one request and gives the connection back."""
    user = User(connector.pool)
    conn = await find(connector, user, url, connect_timeout)
    order.append(index)
    assert await fetch(conn, url) == (200, b"ok")
    user.done(True)
    return conn


def test_async_pool_waiters_are_served_first_come_first_served(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        holder = User(pool)
        conn = await find(connector, holder, url)
        order: list[int] = []
        waiters = [asyncio.ensure_future(take(connector, url, order, i)) for i in range(6)]
        await asyncio.sleep(0)  # one iteration: each task runs up to its wait, in the order created
        assert pool.waiters["127.0.0.1"].parked == 6
        holder.done(True)  # the connection goes idle: the first waiter is woken for it
        late = asyncio.ensure_future(take(connector, url, order, 99))  # arrives while it is about to run
        conns = await asyncio.gather(*waiters, late)
        assert order == [0, 1, 2, 3, 4, 5, 99]  # the newcomer queued behind the waiters
        assert all(c is conn for c in conns)  # each got the connection the previous one released
        assert pool.waiters == {} and pool.connection_count() == 1
        pool.close_all()

    run(main)
    assert ok_server.connection_count == 1


def test_async_pool_woken_waiters_that_lost_their_slot_keep_their_places(
    run: Any, ok_server: MockServer
) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=2)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        holders = [User(pool), User(pool)]
        for holder in holders:
            await find(connector, holder, url)
        order: list[int] = []
        tasks = [asyncio.ensure_future(take(connector, url, order, i)) for i in (1, 2, 3)]
        await asyncio.sleep(0)
        for holder in holders:
            holder.done(True)  # wakes 1 and 2 ...
        address = connector.address_of(URL(url), None)
        # ... but before they run, both idle connections are taken by a path that does not queue (what
        # a held connection's follow-up may do)
        barged = [pool.acquire(address, time.monotonic()) for _ in range(2)]
        assert all(c is not None for c in barged)
        await asyncio.sleep(0)  # 1 and 2 find no slot and wait again, in their places: before 3
        assert pool.waiters["127.0.0.1"].parked == 3
        for conn in barged:
            assert conn is not None
            pool.release(conn, True)
        await asyncio.gather(*tasks)
        assert order == [1, 2, 3]
        pool.close_all()

    run(main)


def test_async_pool_a_newcomer_takes_a_slot_no_waiter_was_woken_for(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=2)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        holders = [User(pool), User(pool)]
        for holder in holders:
            await find(connector, holder, url)
        order: list[int] = []
        waiter = asyncio.ensure_future(take(connector, url, order, 1))
        await asyncio.sleep(0)
        for holder in holders:
            holder.done(True)  # two connections go idle: one wake for the one waiter, one slot over
        assert pool.waiters["127.0.0.1"].woken == 1 and pool.waiters["127.0.0.1"].parked == 0
        assert not pool.must_queue("127.0.0.1")
        # the newcomer takes the slot nobody was woken for, at once (no wait until its timeout)
        newcomer = asyncio.ensure_future(take(connector, url, order, 2, connect_timeout=30.0))
        await asyncio.gather(waiter, newcomer)
        assert sorted(order) == [1, 2] and pool.connection_count() == 2
        pool.close_all()

    run(main)
    assert ok_server.connection_count == 2


def test_async_pool_timeout_has_the_blocking_pools_message(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")
    # the blocking pool's message for the same wait
    blocking = make_connector(max_per_host=1, blocking=True).pool
    blocking.reserve("127.0.0.1", 0.0)
    address = Address("http", "127.0.0.1", ok_server.port)
    with pytest.raises(PoolTimeout) as sync:
        blocking.wait_for_slot(address, time.monotonic() + 0.05)

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        holder = User(connector.pool)
        await find(connector, holder, url)
        started = time.monotonic()
        with pytest.raises(PoolTimeout) as info:
            await find(connector, User(connector.pool), url, connect_timeout=0.2)
        assert time.monotonic() - started >= 0.2  # not a moment before the deadline
        assert str(info.value) == str(sync.value)
        assert info.value.message.startswith("no connection to 127.0.0.1 became free in time: all 1 allowed")
        # the call timeout bounds the wait when it ends sooner than the connect timeout
        with pytest.raises(PoolTimeout):
            await find(
                connector, User(connector.pool, deadline=time.monotonic() + 0.1), url, connect_timeout=30
            )
        assert isinstance(connector.pool, AsyncConnectionPool) and connector.pool.waiters == {}
        holder.done(False)

    run(main)


def test_async_pool_cancelled_waiters_pass_the_slot_on(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        holder = User(pool)
        conn = await find(connector, holder, url)
        order: list[int] = []
        tasks = [asyncio.ensure_future(take(connector, url, order, i)) for i in range(4)]
        await asyncio.sleep(0)
        tasks[1].cancel()  # parked, not woken: it just leaves the queue
        await asyncio.sleep(0)
        assert pool.waiters["127.0.0.1"].parked == 3
        holder.done(True)  # wakes task 0 ...
        assert pool.waiters["127.0.0.1"].woken == 1
        tasks[0].cancel()  # ... which is cancelled before it ran: the wake goes on to task 2
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError) and isinstance(
            results[1], asyncio.CancelledError
        )
        assert results[2] is conn and results[3] is conn
        assert order == [2, 3]
        assert pool.waiters == {} and pool.connection_count() == 1
        pool.close_all()

    run(main)


def test_async_pool_a_failed_connect_frees_the_slot_for_a_waiter(run: Any, ok_server: MockServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = s.getsockname()[1]

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        order: list[int] = []
        failing = asyncio.ensure_future(find(connector, User(connector.pool), f"http://127.0.0.1:{refused}/"))
        waiting = asyncio.ensure_future(take(connector, ok_server.url("/"), order, 1))
        with pytest.raises(OSError):
            await failing
        await waiting  # the refused connect gave its reserved slot back (unreserve), which woke it
        assert order == [1]
        connector.pool.close_all()

    run(main)


def test_async_pool_wake_from_another_thread(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        holder = User(pool)
        first = await find(connector, holder, url)
        order: list[int] = []
        waiter = asyncio.ensure_future(take(connector, url, order, 1))
        await asyncio.sleep(0)
        assert pool.waiters["127.0.0.1"].parked == 1
        # close_all() from a blocking thread frees the slot: the wake reaches the loop thread-safely
        assert await asyncio.get_running_loop().run_in_executor(None, pool.close_all) == 1
        second = await waiter
        assert second is not first and first.closed and order == [1]
        holder.connection = None  # the pool closed it under the holder
        pool.close_all()

    run(main)


def test_async_pool_500_calls_through_4_slots(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=4)
        pool = connector.pool
        assert isinstance(pool, AsyncConnectionPool)
        order: list[int] = []
        held = 0
        most = 0

        async def call(index: int) -> None:
            nonlocal held, most
            user = User(pool)
            conn = await find(connector, user, url, connect_timeout=60.0)  # the bound of the wait, too
            held += 1
            most = max(most, held)
            assert pool.connection_count() <= 4
            order.append(index)
            assert await fetch(conn, url) == (200, b"ok")
            held -= 1
            user.done(True)

        await asyncio.gather(*(call(i) for i in range(500)))
        assert sorted(order) == list(range(500))
        # the first four connected at once; every later call waited, and was served in the order it came
        assert [i for i in order if i >= 4] == list(range(4, 500))
        assert most <= 4 and pool.connection_count() == 4 and pool.waiters == {}
        pool.close_all()

    run(main)
    assert ok_server.connection_count == 4 and ok_server.request_count == 500


def test_async_pool_follows_the_running_loop(ok_server: MockServer) -> None:
    pool = AsyncConnectionPool(5, 300.0, 1)
    url = ok_server.url("/")

    async def once() -> None:
        connector = make_connector(pool=pool)
        order: list[int] = []
        holder = User(pool)
        await find(connector, holder, url)
        waiter = asyncio.ensure_future(take(connector, url, order, 1))
        await asyncio.sleep(0)
        holder.done(False)
        await waiter
        assert order == [1]
        pool.close_all()

    for _ in range(2):  # asyncio.run() twice with one pool, as a long-lived client would
        asyncio.run(once())


def connection(pool_module: Any, address: Address, sockets: list[socket.socket]) -> Any:
    a, b = socket.socketpair()
    sockets.extend([a, b])
    return RealConnection(a, None, address)


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    made: list[socket.socket] = []
    yield made
    for s in made:
        s.close()


def test_async_pool_base_steps_and_hook(twins: Any, sockets: list[socket.socket]) -> None:
    module = twins("fastnet._internal._sync.pool")

    class Recording(module.RealConnectionPool):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.freed: list[str] = []

        def slot_freed(self, host: str) -> None:  # the cpdef hook, overridden in Python
            self.freed.append(host)

    pool = Recording(5, 300.0, 2)
    a = Address("http", "h.test", 80)
    b = Address("http", "h.test", 81)
    assert pool.slot_state(a) == module.SLOT_ROOM and pool.room("h.test") == 2
    assert pool.try_reserve("h.test") and pool.try_reserve("h.test")
    assert not pool.try_reserve("h.test") and pool.slot_state(a) == module.SLOT_WAIT
    assert pool.room("h.test") == 0 and pool.room("other.test") == 2
    c1, c2 = connection(module, a, sockets), connection(module, a, sockets)
    pool.register(c1)
    pool.register(c2)
    pool.release(c1, True)  # idle: one wake
    assert pool.freed == ["h.test"]
    assert pool.slot_state(a) == module.SLOT_IDLE and pool.room("h.test") == 1
    assert pool.slot_state(b) == module.SLOT_ROOM  # another address of the host may replace it
    pool.release(c2, False)  # closed: its slot is freed, one wake
    assert pool.freed == ["h.test", "h.test"] and c2.closed
    # a reservation that replaces an idle connection takes over its slot: no wake for that
    assert pool.try_reserve("h.test") and pool.try_reserve("h.test")
    assert c1.closed and pool.connection_count() == 2 and pool.idle_connection_count() == 0
    assert pool.freed == ["h.test", "h.test"]
    pool.unreserve("h.test")
    assert pool.freed == ["h.test"] * 3
    assert pool.connection_count() == 1
    # without a limit nothing waits, and nobody is told
    free = Recording(5, 300.0, 0)
    assert free.slot_state(a) == module.SLOT_ROOM and free.try_reserve("h.test")
    free.unreserve("h.test")
    assert free.freed == []
    timeout = module.pool_timeout("h.test", 2)
    assert isinstance(timeout, PoolTimeout) and timeout.phase == "connect"
    assert timeout.message == (
        "no connection to h.test became free in time: all 2 allowed (max_connections_per_host) are in use"
    )


def test_async_pool_base_discard_later_wakes_a_thread_waiting_for_the_slot(
    twins: Any, sockets: list[socket.socket]
) -> None:
    module = twins("fastnet._internal._sync.pool")
    pool = module.RealConnectionPool(5, 300.0, 1)
    a = Address("http", "h.test", 80)
    outcome: list[Any] = []

    def reserve() -> None:
        try:
            pool.reserve("h.test", time.monotonic() + 5)
            outcome.append("reserved")
        except PoolTimeout as exc:
            outcome.append(exc)

    def wait_until_a_thread_sleeps() -> None:
        for _ in range(500):  # 5 s at most
            if pool.sleepers:
                return
            time.sleep(0.01)

    for finalizer_holds_the_lock in (False, True):
        assert pool.try_reserve("h.test")
        conn = connection(module, a, sockets)
        pool.register(conn)
        outcome.clear()
        thread = threading.Thread(target=reserve)
        thread.start()
        try:
            wait_until_a_thread_sleeps()
            assert pool.sleepers == 1
            conn.close()
            if finalizer_holds_the_lock:  # a finalizer run under the lock never waits for it...
                with pool.lock:
                    pool.discard_later(conn)
            else:  # ...and one run while the lock is free forgets the connection and wakes the thread now
                pool.discard_later(conn)
        finally:
            thread.join(10)
        assert outcome == ["reserved"]  # before, reserve() never looked at the abandoned connections
        assert pool.connection_count() == 1 and pool.sleepers == 0
        pool.unreserve("h.test")
