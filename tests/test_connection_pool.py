"""``fastnet.ConnectionPool`` (``fastnet/connection_pool.py``), the public face of the pool: its arguments,
counts, ``evict_all``/``cleanup``/``close``, the clients that hold it open (the last one closed closes it),
and one pool serving a blocking ``Client`` and an ``AsyncClient`` at once. Through the real clients
against MockServer; how the engine's pool picks and keeps connections: tests/_internal/engine/test_pool.py."""

from __future__ import annotations

import asyncio
import pickle

import pytest

import fastnet
from fastnet.connection_pool import DEFAULT_MAX_IDLE
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client


@pytest.mark.both_clients
def test_connection_pool_evict_all_and_counts(server: MockServer) -> None:
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


def test_connection_pool_validates_arguments() -> None:
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


@pytest.mark.both_clients
def test_connection_pool_client_close_closes_connections_in_use_and_idle(server: MockServer) -> None:
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


@pytest.mark.both_clients
def test_connection_pool_closing_one_client_keeps_a_sibling_working(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    with make_fast_client() as parent:
        sibling = parent.with_options(read_timeout=3)
        assert sibling.get(server.url("/")).content == b"ok"
        sibling.close()
        assert parent.connection_pool.idle_connection_count() == 1  # the parent still holds the pool
        assert parent.get(server.url("/")).content == b"ok"
    assert parent.connection_pool.connection_count() == 0  # the last client closed it


@pytest.mark.both_clients
def test_connection_pool_clients_sharing_a_pool_share_connections(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    pool = fastnet.ConnectionPool()
    with make_fast_client(connection_pool=pool) as a, make_fast_client(connection_pool=pool) as b:
        sibling = a.with_options(read_timeout=7)
        for client in (a, b, sibling, a, b):
            assert client.get(server.url("/")).content == b"ok"
        assert pool.connection_count() == 1
    assert len({r.connection_index for r in (server.take_request() for _ in range(5))}) == 1


def test_connection_pool_keeps_its_settings() -> None:
    pool = fastnet.ConnectionPool(max_idle_connections=3, keep_alive=12, max_connections_per_host=2)
    assert (pool.max_idle_connections, pool.keep_alive, pool.max_connections_per_host) == (3, 12.0, 2)
    assert isinstance(pool.keep_alive, float)
    default = fastnet.ConnectionPool()
    assert default.max_idle_connections == DEFAULT_MAX_IDLE and default.max_connections_per_host is None
    assert (
        repr(default)
        == f"<ConnectionPool 0 connections, 0 idle, max_idle={DEFAULT_MAX_IDLE}, keep_alive=300.0>"
    )


def test_connection_pool_cannot_be_pickled() -> None:
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(fastnet.ConnectionPool())


def test_connection_pool_cleanup_closes_only_expired_idle_connections(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    pool = fastnet.ConnectionPool(keep_alive=300)
    with make_fast_client(connection_pool=pool) as client:
        client.get(server.url("/"))
        assert pool.cleanup() == 0 and pool.idle_connection_count() == 1  # not expired: kept


def test_connection_pool_close_keeps_the_pool_usable(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    pool = fastnet.ConnectionPool()
    with make_fast_client(connection_pool=pool) as client:
        assert client.get(server.url("/")).content == b"ok"
        pool.close()
        assert pool.connection_count() == 0
        assert client.get(server.url("/")).content == b"ok"  # a new connection, pooled again
        assert pool.idle_connection_count() == 1
    assert [server.take_request().connection_index for _ in range(2)] == [0, 1]


def test_connection_pool_serves_a_blocking_and_an_asyncio_client_at_once(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    pool = fastnet.ConnectionPool()
    blocking = fastnet.Client(connection_pool=pool, trust_env=False)

    async def main() -> None:
        async with fastnet.AsyncClient(connection_pool=pool, trust_env=False) as asynchronous:
            assert (await asynchronous.get(server.url("/a"))).content == b"ok"
            assert blocking.get(server.url("/b")).content == b"ok"
            # each kind keeps its own connection (an asyncio one belongs to its loop); the counts add both
            assert pool.connection_count() == 2 and pool.idle_connection_count() == 2
            pool.evict_all()
            assert pool.connection_count() == 0

    try:
        asyncio.run(main())
        assert blocking.get(server.url("/c")).content == b"ok"
        assert pool.connection_count() == 1  # the blocking client still holds the pool open
    finally:
        blocking.close()
    assert pool.connection_count() == 0
    assert len({server.take_request().connection_index for _ in range(3)}) == 3
