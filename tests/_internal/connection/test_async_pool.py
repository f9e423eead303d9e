"""``AsyncConnectionPool`` under ``max_connections_per_host``: FIFO waiters woken one per freed slot, a
newcomer queued behind them, ``PoolTimeout`` with the blocking pool's message, cancelled waiters (a woken
one passes its wake on), wakes from another thread, 500 calls through 4 slots; and the base pool's
non-blocking steps (``slot_state``, ``try_reserve``) and its ``slot_freed`` hook in both twins. The asyncio
tests run on both loops against ``MockServer``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fastnet._internal.connection.async_pool import AsyncConnectionPool
from fastnet._internal.connection.real_connection import RealConnection
from fastnet.exceptions import PoolTimeout
from fastnet.route import Address
from fastnet.testing import MockResponse, MockServer
from fastnet.url import URL
from tests.support.async_support import User, fetch, find, make_connector


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
        assert connector.pool.waiters == {}
        holder.done(False)

    run(main)


def test_async_pool_cancelled_waiters_pass_the_slot_on(run: Any, ok_server: MockServer) -> None:
    url = ok_server.url("/")

    async def main() -> None:
        connector = make_connector(max_per_host=1)
        pool = connector.pool
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


# --------------------------------------------------------------------------------------- the base pool


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
    module = twins("fastnet._internal.connection.pool")

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
    module = twins("fastnet._internal.connection.pool")
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
