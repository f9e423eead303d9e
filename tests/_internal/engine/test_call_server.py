"""The call-server interceptor (``fastnet._internal._sync.call_server`` and its asyncio source), the last of
the chain: it writes the request it is handed, reads the response head, and returns a response whose
body streams from the exchange; a response without a body gives its connection back at once; a failure
writing or reading the head leaves the connection unused. Through the real clients (blocking, asyncio,
uvloop: one body each) against MockServer."""

from __future__ import annotations

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import assert_pool_clean, make_fast_client

pytestmark = pytest.mark.both_clients


@pytest.mark.parametrize(
    "method, response",
    [
        ("HEAD", MockResponse(200, headers={"Content-Length": "1000"})),
        ("GET", MockResponse(204)),
        ("GET", MockResponse(304, headers={"ETag": '"v1"'})),
        ("GET", MockResponse(200, body=b"")),
    ],
    ids=["HEAD", "204", "304", "length-0"],
)
def test_call_server_a_response_without_a_body_gives_the_connection_back_at_once(
    server: MockServer, method: str, response: MockResponse
) -> None:
    server.enqueue(response, MockResponse(200, body=b"next"))
    with make_fast_client() as client:
        streamed = client.stream(method, server.url("/"))
        pool = client.connection_pool
        assert (pool.connection_count(), pool.idle_connection_count()) == (1, 1)  # before any read
        assert streamed.content == b""
        assert client.get(server.url("/")).content == b"next"
    assert [server.take_request().connection_index for _ in range(2)] == [0, 0]


def test_call_server_a_body_streams_from_the_exchange(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 500_000, chunk_size=10_000))
    with make_fast_client() as client:
        streamed = client.stream("GET", server.url("/"))
        assert client.connection_pool.idle_connection_count() == 0  # the body is still on the wire
        assert sum(len(piece) for piece in streamed.iter_bytes()) == 500_000
        assert client.connection_pool.idle_connection_count() == 1


def test_call_server_writes_the_request_a_network_interceptor_hands_it(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))

    def rewrite(chain: fastnet.Chain) -> fastnet.Response:
        changed = fastnet.Request(
            "PUT",
            chain.request.url,
            headers=chain.request.headers.add("X-Rewritten", "1").set("Content-Length", "7"),
            body=b"changed",
        )
        return chain.proceed(changed)

    with make_fast_client(network_interceptors=[rewrite]) as client:
        response = client.post(server.url("/p"), body=b"original")
        assert response.request is not None
        assert response.content == b"ok" and response.request.method == "POST"
    recorded = server.take_request()
    assert (recorded.method, recorded.body, recorded.header("x-rewritten")) == ("PUT", b"changed", "1")


def test_call_server_skips_100_continue_and_reuses_the_connection(server: MockServer) -> None:
    server.enqueue(MockResponse(201, body=b"stored"), MockResponse(200, body=b"again"))
    with make_fast_client() as client:
        response = client.post(server.url("/up"), body=b"payload", headers={"Expect": "100-continue"})
        assert (response.status_code, response.content) == (201, b"stored")
        assert client.get(server.url("/")).content == b"again"
        assert_pool_clean(client)
    first, second = server.take_request(), server.take_request()
    assert first.body == b"payload" and first.header("expect") == "100-continue"
    assert second.connection_index == first.connection_index  # the interim head left it reusable


def test_call_server_interim_heads_are_skipped(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"final", informational=[(103, {"Link": "</s.css>"}), (102, None)]))
    with make_fast_client() as client:
        response = client.get(server.url("/"))
        assert (response.status_code, response.content) == (200, b"final")
        assert "link" not in response.headers


@pytest.mark.parametrize("policy", [SocketPolicy.DISCONNECT_AFTER_REQUEST, SocketPolicy.RESET_AFTER_REQUEST])
def test_call_server_a_failure_reading_the_head_leaves_no_connection(
    server: MockServer, policy: SocketPolicy
) -> None:
    server.enqueue(MockResponse(200, policy=policy), MockResponse(200, body=b"fresh"))
    with make_fast_client(retry_on_connection_failure=False) as client:
        with pytest.raises(fastnet.NetworkError) as raised:
            client.get(server.url("/first"))
        assert str(raised.value.url) == server.url("/first")
        assert client.connection_pool.connection_count() == 0
        assert client.get(server.url("/second")).content == b"fresh"
    assert [server.take_request().connection_index for _ in range(2)] == [0, 1]
