"""The connect interceptor (``fastnet._internal._sync.connect`` and its asyncio source): a connection for each
request, pooled or new, an exchange on it, and this hop's URL on every connect-side error. Through the
real clients (blocking, asyncio, uvloop: one body each) against MockServer and refused loopback ports."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_client, make_fast_client, route_of
from tests.support.fakes import FakeDns

pytestmark = pytest.mark.both_clients


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, not listening) for the whole test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_connect_network_interceptors_run_on_the_connection_it_found(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    seen: list[tuple[str, int]] = []

    def network(chain: fastnet.Chain) -> fastnet.Response:
        connection = chain.connection
        assert connection is not None
        seen.append((route_of(connection).socket_address[0], route_of(connection).socket_address[1]))
        return chain.proceed(chain.request)

    with make_fast_client(network_interceptors=[network]) as client:
        for _ in range(3):
            assert client.get(server.url("/")).content == b"ok"
        assert_pool_clean(client)
    assert seen == [("127.0.0.1", server.port)] * 3
    assert [server.take_request().connection_index for _ in range(3)] == [0, 0, 0]  # pooled after the first


def test_connect_a_connect_failure_names_the_hop_that_failed(server: MockServer, refused_port: int) -> None:
    target = f"http://127.0.0.1:{refused_port}/elsewhere"
    server.enqueue(MockResponse(302, headers={"Location": target}))
    with make_fast_client(retry_on_connection_failure=False) as client:
        with pytest.raises(fastnet.ConnectError) as raised:
            client.get(server.url("/start"))
    assert str(raised.value.url) == target  # the redirect's URL, not the call's first


def test_connect_a_dns_failure_names_the_hop_that_failed(server: MockServer) -> None:
    server.enqueue(MockResponse(301, headers={"Location": "http://nowhere.test/page"}))
    with make_fast_client(dns=FakeDns({"start.test": ["127.0.0.1"]})) as client:
        with pytest.raises(fastnet.UnknownHostError) as raised:
            client.get(f"http://start.test:{server.port}/")
    assert str(raised.value.url) == "http://nowhere.test/page"


def test_connect_the_chains_timeouts_reach_the_connection(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"late", head_delay=3.0))

    def impatient(chain: fastnet.Chain) -> fastnet.Response:
        return chain.with_read_timeout(0.3).proceed(chain.request)

    with make_client(interceptors=[impatient], read_timeout=30) as client:
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))  # the client's 30 s would have waited for the answer


def test_connect_refuses_a_new_exchange_while_the_previous_response_is_open(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x" * 300_000)
    errors: list[str] = []

    def twice(chain: fastnet.Chain) -> fastnet.Response:
        first = chain.proceed(chain.request)  # its body is left unread and open (and referenced)
        try:
            return chain.proceed(chain.request)
        except RuntimeError as exc:
            errors.append(str(exc))
            raise
        finally:
            first.close()

    with make_fast_client(interceptors=[twice]) as client:
        with pytest.raises(RuntimeError, match="previous response is still open"):
            client.get(server.url("/"))
    assert errors and "response.close()" in errors[0]


def test_connect_a_closed_previous_response_lets_the_next_exchange_run(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"first"), MockResponse(200, body=b"second"))

    def twice(chain: fastnet.Chain) -> fastnet.Response:
        chain.proceed(chain.request).close()
        return chain.proceed(chain.request)

    with make_fast_client(interceptors=[twice]) as client:
        assert client.get(server.url("/")).content == b"second"
        assert_pool_clean(client)
