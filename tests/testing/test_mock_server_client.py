"""MockServer driven by fastnet's own client: many connections at once (the listen backlog), and a TLS
client pointed at the plain port (the server answers the ClientHello as nginx does, so it fails fast)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, RecordedRequest
from fastnet.testing._mock_server import DEFAULT_BACKLOG


@pytest.fixture
def listen_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every backlog passed to ``socket.socket.listen`` while the test runs."""
    calls: list[int] = []
    real_listen = socket.socket.listen

    def spy(self: socket.socket, backlog: int = 128) -> None:
        calls.append(backlog)
        real_listen(self, backlog)

    monkeypatch.setattr(socket.socket, "listen", spy)
    yield calls


def test_default_backlog_fits_hundreds_of_connections(listen_calls: list[int]) -> None:
    assert DEFAULT_BACKLOG >= 1024
    with MockServer() as server:
        assert server.backlog == DEFAULT_BACKLOG
    assert listen_calls == [DEFAULT_BACKLOG]


def test_backlog_option_reaches_listen(listen_calls: list[int]) -> None:
    with MockServer(backlog=8) as server:
        assert server.backlog == 8
    assert listen_calls == [8]


@pytest.mark.parametrize("bad", [1.5, "8", None, True])
def test_backlog_must_be_an_int(bad: Any) -> None:
    with pytest.raises(TypeError, match="backlog"):
        MockServer(backlog=bad)


@pytest.mark.parametrize("bad", [0, -1])
def test_backlog_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="backlog"):
        MockServer(backlog=bad)


def test_map_with_256_in_flight_opens_256_connections() -> None:
    """Every request waits in the dispatcher until all 256 have arrived, so all 256 connections are open
    at the same moment; each of them completes."""
    n = 256
    barrier = threading.Barrier(n, timeout=60)

    def dispatcher(request: RecordedRequest) -> MockResponse:
        barrier.wait()
        return MockResponse(200, body=request.path.encode())

    pool = fastnet.ConnectionPool(max_idle_connections=n)
    with MockServer() as server, fastnet.Client(connection_pool=pool, call_timeout=120) as client:
        server.dispatcher = dispatcher
        urls = [server.url(f"/{i}") for i in range(n)]
        results = dict(client.map(urls, max_in_flight=n))
        assert len(results) == n
        failures = {url: r for url, r in results.items() if isinstance(r, Exception)}
        assert failures == {}
        for url, response in results.items():
            assert isinstance(response, fastnet.Response)
            assert response.status_code == 200
            assert str(url).endswith(response.text)
        assert server.connection_count == n
        assert server.request_count == n
    assert server.errors == []


def test_tls_client_on_the_plain_port_fails_fast_with_a_tls_error() -> None:
    """The server answers the ClientHello with a plain-text 400 (as nginx does on a plain port), so the
    handshake fails at once: a TlsError well within call_timeout, not a CallTimeout."""
    with MockServer() as server:
        with fastnet.Client(verify=False, connect_timeout=30, read_timeout=30, call_timeout=5) as client:
            with pytest.raises(fastnet.TlsError) as info:
                client.get(f"https://127.0.0.1:{server.port}/")
        assert not isinstance(info.value, fastnet.CallTimeout)
        assert server.request_count == 0
    assert server.errors == []


def test_plain_requests_still_served_after_a_tls_probe() -> None:
    with MockServer() as server:
        server.enqueue(MockResponse(200, body=b"ok"))
        with fastnet.Client(verify=False, call_timeout=5) as client:
            with pytest.raises(fastnet.TlsError):
                client.get(f"https://127.0.0.1:{server.port}/")
            assert client.get(server.url("/")).text == "ok"
    assert server.errors == []
