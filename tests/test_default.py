"""``fastnet.get`` and friends (``fastnet/_default.py``): requests' and httpx's module-level calls on one
shared ``Client``, made on first use with the default options and replaced once closed. Against
MockServer on real sockets; the proxy variables are cleared, since the shared client reads them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import fastnet
from fastnet import _default
from fastnet.testing import MockResponse, MockServer

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def fresh_default_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh shared client for each test, made without proxies from the environment, closed after."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    fastnet.default_client().close()
    try:
        yield
    finally:
        fastnet.default_client().close()


def test_default_module_level_get_uses_one_shared_client(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"one"), MockResponse(201, body=b"two"))
    assert fastnet.get(server.url("/1"), params={"a": "b"}).content == b"one"
    assert fastnet.post(server.url("/2"), data={"f": "v"}).status_code == 201
    assert fastnet.default_client() is fastnet.default_client()
    assert server.take_request().target == "/1?a=b"
    posted = server.take_request()
    assert (posted.body, posted.connection_index) == (b"f=v", 0)  # the first one's connection


def test_default_client_is_made_with_the_default_options() -> None:
    client = fastnet.default_client()
    assert isinstance(client, fastnet.Client) and not client.is_closed
    with fastnet.Client() as made:
        assert (client.connect_timeout, client.read_timeout) == (made.connect_timeout, made.read_timeout)
        assert client.follow_redirects == made.follow_redirects


def test_default_a_closed_client_is_replaced(server: MockServer) -> None:
    first = fastnet.default_client()
    first.close()
    second = fastnet.default_client()
    assert second is not first and not second.is_closed
    server.enqueue(MockResponse(200, body=b"after"))
    assert fastnet.get(server.url("/")).content == b"after"
    assert fastnet.default_client() is second


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH"])
def test_default_each_method_function_sends_its_method(server: MockServer, method: str) -> None:
    server.enqueue(MockResponse(200, body=b"" if method == "HEAD" else b"done"))
    function = getattr(fastnet, method.lower())
    response = function(server.url("/m"), headers={"X-Test": method})
    assert response.status_code == 200
    recorded = server.take_request()
    assert (recorded.method, recorded.target, recorded.header("x-test")) == (method, "/m", method)


def test_default_request_takes_the_request_options(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    response = fastnet.request("PUT", server.url("/r"), params={"q": "1"}, json={"a": 1}, auth=("u", "p"))
    assert response.content == b"ok"
    recorded = server.take_request()
    assert (recorded.method, recorded.target, recorded.body) == ("PUT", "/r?q=1", b'{"a":1}')
    assert recorded.header("authorization") == "Basic dTpw"
    assert recorded.header("content-type") == "application/json"


def test_default_request_reads_the_body_and_stream_does_not(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 100_000), MockResponse(200, body=b"y" * 100_000))
    pool = fastnet.default_client().connection_pool
    read = fastnet.get(server.url("/read"))
    assert len(read.content) == 100_000
    assert pool.idle_connection_count() == 1  # read to the end: the connection went back to the pool
    with fastnet.stream("GET", server.url("/stream")) as streamed:
        assert pool.idle_connection_count() == 0  # the body is still on the wire
        assert sum(len(chunk) for chunk in streamed.iter_bytes()) == 100_000
    assert pool.idle_connection_count() == 1


def test_default_client_is_made_once_when_threads_race() -> None:
    fastnet.default_client().close()
    _default._CLIENT = None
    barrier = threading.Barrier(16)
    seen: list[fastnet.Client] = []

    def first_use() -> None:
        barrier.wait()
        seen.append(fastnet.default_client())

    threads = [threading.Thread(target=first_use) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 16 and all(client is seen[0] for client in seen)
