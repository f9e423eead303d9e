"""``recover()`` (which network failures the core retries by itself) and the 408/503 status retries."""

from __future__ import annotations

import io
import socket
import threading

import pytest

import fastnet
from fastnet.exceptions import (
    CanceledError,
    ConnectError,
    ConnectionClosedError,
    ProtocolError,
    ReadTimeout,
    TlsVerificationError,
)
from fastnet.testing import MockResponse, MockServer, SocketPolicy

DROP = SocketPolicy.DISCONNECT_AFTER_REQUEST


@pytest.fixture
def server():
    with MockServer() as s:
        yield s


class Decisions(fastnet.EventListener):
    def __init__(self) -> None:
        self.retry: list[tuple[str, bool]] = []

    def retry_decision(self, call, error, retry):
        self.retry.append((type(error).__name__, retry))


def make_client(**options):
    options.setdefault("trust_env", False)
    return fastnet.Client(**options)


def assert_pool_clean(client: fastnet.Client) -> None:
    pool = client.connection_pool
    assert pool.connection_count() == pool.idle_connection_count()


def warm_up(client: fastnet.Client, server: MockServer) -> None:
    """One successful exchange, so the next request goes out on a pooled (possibly stale) connection."""
    server.enqueue(MockResponse(200, body=b"warm"))
    assert client.get(server.url("/warm")).text == "warm"
    assert client.connection_pool.idle_connection_count() == 1
    server.take_request()


# ------------------------------------------------------------------------------------------------ stale pool


def test_recover_post_on_stale_pooled_connection_is_retried(server):
    events = Decisions()
    with make_client(event_listener=events) as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(201, body=b"created"))
        r = client.post(server.url("/orders"), body=b"order-1")
        assert r.status_code == 201
        first, second = server.take_request(), server.take_request()
        # a POST replayed on a stale connection: the server saw the order twice
        # (a one-shot body, retry_on_connection_failure=False or fastnet.Retry avoid it)
        assert first.body == second.body == b"order-1"
        assert first.connection_index == 0 and second.connection_index == 1
        assert events.retry == [("ConnectionClosedError", True)]
        assert_pool_clean(client)


def test_recover_disabled_does_not_retry_stale_post(server):
    events = Decisions()
    with make_client(retry_on_connection_failure=False, event_listener=events) as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(201))
        with pytest.raises(ConnectionClosedError):
            client.post(server.url("/orders"), body=b"order-1")
        assert server.request_count == 2  # warm-up + the one attempt
        assert events.retry == [("ConnectionClosedError", False)]
        assert_pool_clean(client)


def test_recover_one_shot_body_not_retried_on_stale_connection(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(201))
        with pytest.raises(ConnectionClosedError):
            client.post(server.url("/upload"), body=iter([b"chunk-1", b"chunk-2"]))
        assert server.request_count == 2
        assert_pool_clean(client)


def test_recover_seekable_file_body_is_rewound(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(201))
        body = io.BytesIO(b"0123456789")
        body.seek(2)
        assert client.put(server.url("/f"), body=body).status_code == 201
        assert server.take_request().body == b"23456789"
        assert server.take_request().body == b"23456789"


def test_recover_failures_attached_to_final_error(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(200, policy=DROP))
        with pytest.raises(ConnectionClosedError) as info:
            client.get(server.url("/"))
        # stale connection recovered once; the fresh one then failed with no other route
        assert len(info.value.recovered) == 1
        assert isinstance(info.value.recovered[0], ConnectionClosedError)
        assert_pool_clean(client)


# ------------------------------------------------------------------------------------------------ routes


def test_recover_fresh_connection_without_other_route_not_retried(server):
    events = Decisions()
    with make_client(event_listener=events) as client:
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(200))
        with pytest.raises(ConnectionClosedError):
            client.get(server.url("/"))
        assert server.request_count == 1
        assert events.retry == [("ConnectionClosedError", False)]
        assert_pool_clean(client)


@pytest.fixture
def two_routes():
    """Two servers on one port, 127.0.0.1 and 127.0.0.2, and a DNS name resolving to both (in that order)."""
    with MockServer(host="127.0.0.1") as one:
        try:
            two = MockServer(host="127.0.0.2", port=one.port)
            two.start()
        except OSError as exc:  # pragma: no cover - the port is taken on 127.0.0.2
            pytest.skip(f"cannot bind 127.0.0.2:{one.port}: {exc}")
        try:
            yield one, two, {"multi.example": ["127.0.0.1", "127.0.0.2"]}
        finally:
            two.shutdown()


def test_recover_fresh_connection_failure_moves_to_next_route(two_routes):
    one, two, answers = two_routes
    events = Decisions()
    with make_client(dns=lambda host: answers[host], happy_eyeballs=False, event_listener=events) as client:
        one.enqueue(MockResponse(200, policy=DROP))
        two.enqueue(MockResponse(200, body=b"second route"))
        r = client.post(f"http://multi.example:{one.port}/", body=b"x")
        assert r.text == "second route"
        assert one.take_request().body == b"x" and two.take_request().body == b"x"
        assert events.retry == [("ConnectionClosedError", True)]
        assert r.route.socket_address[0] == "127.0.0.2"
        assert_pool_clean(client)


def test_recover_one_shot_body_on_failed_route_not_retried(two_routes):
    one, two, answers = two_routes
    with make_client(dns=lambda host: answers[host], happy_eyeballs=False) as client:
        one.enqueue(MockResponse(200, policy=DROP))
        two.enqueue(MockResponse(200))
        with pytest.raises(ConnectionClosedError):
            client.post(f"http://multi.example:{one.port}/", body=iter([b"once"]))
        assert one.request_count == 1 and two.request_count == 0
        assert_pool_clean(client)


# ------------------------------------------------------------------------------------------- never retried


def test_recover_protocol_error_not_retried(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(raw=b"HTTP/1.1 abc Nonsense\r\n\r\n"), MockResponse(200))
        with pytest.raises(ProtocolError):
            client.get(server.url("/"))
        assert server.request_count == 2
        assert_pool_clean(client)


def test_recover_timeout_not_retried(server):
    with make_client(read_timeout=0.2) as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE), MockResponse(200))
        with pytest.raises(ReadTimeout):
            client.get(server.url("/"))
        assert server.request_count == 2
        assert_pool_clean(client)


def test_recover_canceled_not_retried(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE), MockResponse(200))
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        timer = threading.Timer(0.2, call.cancel)
        timer.start()
        try:
            with pytest.raises(CanceledError):
                call.execute()
        finally:
            timer.cancel()
        assert server.request_count == 2
        assert_pool_clean(client)


def test_recover_connect_failure_not_retried_by_recover():
    events = Decisions()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with make_client(event_listener=events) as client:
            with pytest.raises(ConnectError):
                client.get(f"http://127.0.0.1:{port}/")
            assert events.retry == [("ConnectError", False)]
            assert client.connection_pool.connection_count() == 0


def test_recover_certificate_failure_not_retried():
    with MockServer(tls=True) as server:
        with make_client() as client:  # default trust store: the test CA is unknown
            with pytest.raises(TlsVerificationError):
                client.get(server.url("/"))
            assert server.connection_count == 1
            assert client.connection_pool.connection_count() == 0


# ------------------------------------------------------------------------------------------------ 408 / 503


def test_recover_408_retried_once(server):
    with make_client() as client:
        server.enqueue(MockResponse(408), MockResponse(200, body=b"ok"))
        r = client.get(server.url("/"))
        assert r.text == "ok" and [p.status_code for p in r.history] == [408]
        server.dispatcher = lambda rec: MockResponse(408)
        r = client.get(server.url("/"))
        assert r.status_code == 408 and len(r.history) == 1
        assert server.request_count == 4
        assert_pool_clean(client)


@pytest.mark.parametrize(
    "retry_after, retried",
    [
        (None, True),
        ("0", True),
        ("1", False),
        ("abc", False),
        ("99999999999999999999", False),
        ("Wed, 21 Oct 2015 07:28:00 GMT", False),
    ],
)
def test_recover_408_retry_after(server, retry_after, retried):
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    with make_client() as client:
        server.enqueue(MockResponse(408, headers=headers), MockResponse(200))
        assert client.get(server.url("/")).status_code == (200 if retried else 408)
        assert_pool_clean(client)


def test_recover_408_not_retried_when_retries_off_or_one_shot(server):
    with make_client(retry_on_connection_failure=False) as client:
        server.enqueue(MockResponse(408), MockResponse(200))
        assert client.get(server.url("/")).status_code == 408
    server.dispatcher = None
    with server._lock:
        server._responses.clear()
    with make_client() as client:
        server.enqueue(MockResponse(408), MockResponse(200))
        assert client.post(server.url("/"), body=iter([b"once"])).status_code == 408


@pytest.mark.parametrize(
    "retry_after, retried",
    [
        (None, False),
        ("0", True),
        ("00", True),
        ("1", False),
        ("-0", False),
        (" 0 ", True),
        ("9" * 30, False),
        ("Wed, 21 Oct 2015 07:28:00 GMT", False),
    ],
)
def test_recover_503_retry_after(server, retry_after, retried):
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    with make_client() as client:
        server.enqueue(MockResponse(503, headers=headers), MockResponse(200))
        assert client.get(server.url("/")).status_code == (200 if retried else 503)
        assert_pool_clean(client)


def test_recover_503_retried_once_only(server):
    with make_client() as client:
        server.dispatcher = lambda rec: MockResponse(503, headers={"Retry-After": "0"})
        r = client.get(server.url("/"))
        assert r.status_code == 503 and len(r.history) == 1 and server.request_count == 2


def test_recover_503_not_retried_when_retries_off(server):
    # OkHttp retries this even with retries off; fastnet does not (a deliberate difference)
    with make_client(retry_on_connection_failure=False) as client:
        server.enqueue(MockResponse(503, headers={"Retry-After": "0"}), MockResponse(200))
        assert client.get(server.url("/")).status_code == 503


def test_recover_runs_in_the_loaded_build():
    from fastnet import _compat
    from fastnet._internal.retry_follow_up import RetryAndFollowUpInterceptor

    suffix = "_retry_follow_up_py" if _compat.NO_EXTENSIONS else "_retry_follow_up_c"
    if not _compat.NO_EXTENSIONS and not RetryAndFollowUpInterceptor.__module__.endswith("_c"):
        pytest.skip("compiled twins not built")
    assert RetryAndFollowUpInterceptor.__module__ == "fastnet._internal." + suffix
    with make_client() as client:
        kinds = {type(i).__module__ for i in client._core.interceptors}
        assert "fastnet._internal." + suffix in kinds
