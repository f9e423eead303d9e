"""The connection pool through the real client: reuse order, limits, expiry, when a connection goes
back to the pool and when it is closed, the idle health probe and the per-host connection limit."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import make_fast_client

pytestmark = pytest.mark.both_clients


def _connection_indexes(server: MockServer, n: int) -> list[int]:
    return [server.take_request().connection_index for _ in range(n)]


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


def test_pool_max_idle_zero_never_pools(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    pool = fastnet.ConnectionPool(max_idle_connections=0)
    with make_fast_client(connection_pool=pool) as client:
        client.get(server.url("/"))
        client.get(server.url("/"))
        assert pool.connection_count() == 0
    assert _connection_indexes(server, 2) == [0, 1]


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


def test_pool_evict_all_and_counts(server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    with make_fast_client() as client:
        pool = client.connection_pool
        held = client.stream("GET", server.url("/"))
        client.get(server.url("/"))
        client.get(server.url("/"))
        assert pool.connection_count() == 2 and pool.idle_connection_count() == 1
        pool.evict_all()
        assert pool.connection_count() == 1 and pool.idle_connection_count() == 0  # in use survives
        held.close()
        assert pool.idle_connection_count() == 1
        pool.evict_all()
        assert pool.connection_count() == 0
        assert "0 connections" in repr(pool)


def test_pool_validates_arguments() -> None:
    with pytest.raises(ValueError, match="max_idle_connections"):
        fastnet.ConnectionPool(max_idle_connections=-1)
    with pytest.raises(TypeError, match="max_idle_connections"):
        fastnet.ConnectionPool(max_idle_connections=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep_alive"):
        fastnet.ConnectionPool(keep_alive=0)
    with pytest.raises(TypeError, match="keep_alive"):
        fastnet.ConnectionPool(keep_alive="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_connections_per_host"):
        fastnet.ConnectionPool(max_connections_per_host=0)


def test_pool_streamed_body_not_pooled_until_read(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 10_000))
    with make_fast_client() as client:
        r = client.stream("GET", server.url("/"))
        assert client.connection_pool.idle_connection_count() == 0
        assert len(r.read()) == 10_000
        assert client.connection_pool.idle_connection_count() == 1
        r.close()
        assert client.connection_pool.idle_connection_count() == 1


def test_pool_early_close_drains_fast_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"y" * 50_000), MockResponse(200, body=b"next"))
    with make_fast_client() as client:
        with client.stream("GET", server.url("/")) as r:
            assert r.status_code == 200  # body never read
        assert client.connection_pool.idle_connection_count() == 1
        assert client.get(server.url("/")).content == b"next"
    assert _connection_indexes(server, 2) == [0, 0]


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


def test_pool_early_close_chunked(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"c" * 30_000, chunked=True, chunk_size=1000), MockResponse(200))
    with make_fast_client() as client:
        client.stream("GET", server.url("/")).close()
        assert client.connection_pool.idle_connection_count() == 1
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 0]


def test_pool_read_until_close_body_never_pooled(server: MockServer) -> None:
    raw = b"HTTP/1.1 200 OK\r\n\r\nuntil close"
    server.enqueue(MockResponse(raw=raw, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"until close"
        assert client.connection_pool.connection_count() == 0


def test_pool_response_connection_close_honoured(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Connection": "close"}, body=b"bye"), MockResponse(200))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"bye"
        assert client.connection_pool.connection_count() == 0
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 1]


def test_pool_request_connection_close_honoured(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client() as client:
        client.get(server.url("/"), headers={"Connection": "close"})
        assert client.connection_pool.connection_count() == 0
        client.get(server.url("/"))
    assert _connection_indexes(server, 2) == [0, 1]


def test_pool_http10_without_keep_alive_not_pooled(server: MockServer) -> None:
    server.enqueue(
        MockResponse(200, http_version="HTTP/1.0", body=b"old", policy=SocketPolicy.CLOSE_AFTER_RESPONSE)
    )
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"old"
        assert client.connection_pool.connection_count() == 0


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


def test_pool_per_host_slot_freed_after_failure(server: MockServer) -> None:
    server.enqueue(MockResponse(raw=b"nonsense\r\n\r\n"), MockResponse(200, body=b"ok"))
    with make_fast_client(max_connections_per_host=1, call_timeout=5) as client:
        with pytest.raises(fastnet.ProtocolError):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
        assert client.get(server.url("/")).content == b"ok"


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


def test_pool_client_close_closes_connections_in_use_and_idle(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"idle"), MockResponse(200, body=b"x" * 200_000))
    pool = fastnet.ConnectionPool()
    client = make_fast_client(connection_pool=pool)
    assert client.get(server.url("/")).content == b"idle"
    streaming = client.stream("GET", server.url("/"))
    assert pool.connection_count() == 1 and pool.idle_connection_count() == 0
    client.close()
    assert pool.connection_count() == 0
    with pytest.raises(fastnet.NetworkError):
        streaming.content  # noqa: B018 - its socket was closed under it
    with pytest.raises(RuntimeError, match="closed"):
        client.get(server.url("/"))
    assert client.is_closed


def test_pool_closing_one_client_keeps_a_sibling_working(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    with make_fast_client() as parent:
        sibling = parent.with_options(read_timeout=3)
        assert sibling.get(server.url("/")).content == b"ok"
        sibling.close()
        assert parent.connection_pool.idle_connection_count() == 1  # the parent still holds the pool
        assert parent.get(server.url("/")).content == b"ok"
    assert parent.connection_pool.connection_count() == 0  # the last client closed it


def test_pool_clients_sharing_a_pool_share_connections(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    pool = fastnet.ConnectionPool()
    with make_fast_client(connection_pool=pool) as a, make_fast_client(connection_pool=pool) as b:
        sibling = a.with_options(read_timeout=7)
        for client in (a, b, sibling, a, b):
            assert client.get(server.url("/")).content == b"ok"
        assert pool.connection_count() == 1
    assert len({r.connection_index for r in (server.take_request() for _ in range(5))}) == 1
