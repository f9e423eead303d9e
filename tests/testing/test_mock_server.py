"""Tests for fastnet.testing.MockServer, driven with raw sockets, http.client and ssl only."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest

from fastnet.testing import MockResponse, MockServer, RecordedRequest, SocketPolicy

TIMEOUT = 5.0


@pytest.fixture
def strict_server() -> Iterator[MockServer]:
    """conftest's ``server``, and the test fails if the server recorded an error."""
    with MockServer() as s:
        yield s
    assert s.errors == []


@pytest.fixture(scope="module")
def tls_server_ca() -> object:
    trustme = pytest.importorskip("trustme")
    return trustme.CA()


@pytest.fixture
def strict_tls_server(tls_server_ca: object) -> Iterator[MockServer]:
    """``strict_server`` over TLS, its certificate from this module's one test CA."""
    with MockServer(tls=True, ca=tls_server_ca) as s:  # type: ignore[arg-type]
        yield s
    assert s.errors == []


def _connect(server: MockServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=TIMEOUT)


def _recv_until_eof(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    data = bytearray()
    for _ in range(10_000):
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > limit:
            break
    raise AssertionError("no EOF")


def _recv_head(sock: socket.socket, buf: bytearray) -> bytes:
    for _ in range(10_000):
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = bytes(buf[: end + 4])
            del buf[: end + 4]
            return head
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"EOF before a complete head: {bytes(buf)!r}")
        buf += chunk
    raise AssertionError("head never completed")


def _recv_exact(sock: socket.socket, buf: bytearray, n: int) -> bytes:
    for _ in range(10_000):
        if len(buf) >= n:
            data = bytes(buf[:n])
            del buf[:n]
            return data
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("EOF before the body ended")
        buf += chunk
    raise AssertionError("body never completed")


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _exchange(sock: socket.socket, request: bytes, buf: bytearray | None = None) -> tuple[bytes, bytes]:
    """Send ``request`` and read one Content-Length framed response: ``(head, body)``."""
    buf = bytearray() if buf is None else buf
    sock.sendall(request)
    head = _recv_head(sock, buf)
    return head, _recv_exact(sock, buf, _content_length(head))


def _get(server: MockServer, path: str = "/", method: str = "GET") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=TIMEOUT)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# --- queue, default response, dispatcher ------------------------------------------------------------


def test_mock_server_serves_queue_in_order(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"one"))
    strict_server.enqueue(MockResponse(201, body="two"), MockResponse(202, body=b"three"))
    assert _get(strict_server, "/a") == (200, b"one")
    assert _get(strict_server, "/b") == (201, b"two")
    assert _get(strict_server, "/c") == (202, b"three")
    assert [strict_server.take_request().path for _ in range(3)] == ["/a", "/b", "/c"]
    assert strict_server.request_count == 3
    assert strict_server.connection_count == 3


def test_mock_server_default_response_when_queue_empty(strict_server: MockServer) -> None:
    assert _get(strict_server) == (404, b"no response enqueued")
    strict_server.default_response = MockResponse(503, body=b"down")
    assert _get(strict_server) == (503, b"down")


def test_mock_server_dispatcher_replaces_queue(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"queued"))

    def dispatch(request: RecordedRequest) -> MockResponse:
        return MockResponse(200, body=f"{request.method} {request.path} {request.body!r}")

    strict_server.dispatcher = dispatch
    assert _get(strict_server, "/x?y") == (200, b"GET /x b''")
    sock = _connect(strict_server)
    with sock:
        _, body = _exchange(sock, b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
    assert body == b"POST /p b'abc'"


def test_mock_server_dispatcher_exception_answers_500() -> None:
    with MockServer() as server:

        def dispatch(request: RecordedRequest) -> MockResponse:
            raise RuntimeError("boom")

        server.dispatcher = dispatch
        status, body = _get(server)
    assert status == 500
    assert b"RuntimeError: boom" in body
    assert len(server.errors) == 1 and isinstance(server.errors[0], RuntimeError)


def test_mock_server_take_request_times_out(strict_server: MockServer) -> None:
    with pytest.raises(TimeoutError):
        strict_server.take_request(timeout=0.05)


# --- recording -------------------------------------------------------------------------------------


def test_mock_server_records_request_fields(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200))
    head = b"GET /path?q=1 HTTP/1.1\r\nHost: example.test\r\nX-A: 1\r\nx-a:  2 \r\nAccept: */*\r\n\r\n"
    sock = _connect(strict_server)
    with sock:
        _exchange(sock, head)
    rec = strict_server.take_request(timeout=TIMEOUT)
    assert rec.method == "GET"
    assert rec.target == "/path?q=1"
    assert rec.path == "/path"
    assert rec.query == "q=1"
    assert rec.http_version == "HTTP/1.1"
    assert rec.request_line == "GET /path?q=1 HTTP/1.1"
    assert rec.headers == [("Host", "example.test"), ("X-A", "1"), ("x-a", "2"), ("Accept", "*/*")]
    assert rec.header("x-A") == "2"
    assert rec.header_values("X-a") == ["1", "2"]
    assert rec.header("missing") is None
    assert rec.body == b""
    assert rec.chunked is False
    assert rec.raw_head == head
    assert rec.tls is False and rec.server_name is None
    assert rec.sequence_number == 0 and rec.connection_index == 0


def test_mock_server_query_absent_vs_empty(strict_server: MockServer) -> None:
    _get(strict_server, "/a")
    _get(strict_server, "/b?")
    assert strict_server.take_request().query is None
    assert strict_server.take_request().query == ""


def test_mock_server_keep_alive_sequence_numbers_and_connection_index(strict_server: MockServer) -> None:
    for i in range(4):
        strict_server.enqueue(MockResponse(200, body=str(i)))
    first = http.client.HTTPConnection(strict_server.host, strict_server.port, timeout=TIMEOUT)
    second = http.client.HTTPConnection(strict_server.host, strict_server.port, timeout=TIMEOUT)
    try:
        for conn in (first, first, first):
            conn.request("GET", "/")
            conn.getresponse().read()
        second.request("GET", "/")
        second.getresponse().read()
    finally:
        first.close()
        second.close()
    recs = [strict_server.take_request() for _ in range(4)]
    assert [(r.connection_index, r.sequence_number) for r in recs] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert strict_server.connection_count == 2


def test_mock_server_pipelined_requests(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"a"), MockResponse(200, body=b"b"))
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        sock.sendall(b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
        bodies = []
        for _ in range(2):
            head = _recv_head(sock, buf)
            bodies.append(_recv_exact(sock, buf, _content_length(head)))
    assert bodies == [b"a", b"b"]
    assert [strict_server.take_request().sequence_number for _ in range(2)] == [0, 1]


def test_mock_server_content_length_request_body(strict_server: MockServer) -> None:
    conn = http.client.HTTPConnection(strict_server.host, strict_server.port, timeout=TIMEOUT)
    try:
        conn.request("PUT", "/up", body=b"x" * 100_000, headers={"Content-Type": "application/octet-stream"})
        conn.getresponse().read()
    finally:
        conn.close()
    rec = strict_server.take_request()
    assert rec.body == b"x" * 100_000
    assert rec.chunked is False


def test_mock_server_chunked_request_body(strict_server: MockServer) -> None:
    sock = _connect(strict_server)
    with sock:
        _exchange(
            sock,
            b"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n1;ext=1\r\n,\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
        )
    rec = strict_server.take_request()
    assert rec.body == b"hello, world"
    assert rec.chunked is True
    assert rec.trailers == [("X-Trailer", "t")]


def test_mock_server_chunked_request_body_from_http_client(strict_server: MockServer) -> None:
    conn = http.client.HTTPConnection(strict_server.host, strict_server.port, timeout=TIMEOUT)
    try:
        conn.request("POST", "/", body=iter([b"ab", b"cd", b"e"]), encode_chunked=True)
        conn.getresponse().read()
    finally:
        conn.close()
    rec = strict_server.take_request()
    assert rec.body == b"abcde" and rec.chunked


def test_mock_server_absolute_form_target(strict_server: MockServer) -> None:
    sock = _connect(strict_server)
    with sock:
        _exchange(sock, b"GET http://example.test:8080/a/b?c=d HTTP/1.1\r\nHost: example.test:8080\r\n\r\n")
        _exchange(sock, b"GET http://example.test HTTP/1.1\r\nHost: example.test\r\n\r\n")
    rec = strict_server.take_request()
    assert rec.target == "http://example.test:8080/a/b?c=d"
    assert rec.path == "/a/b" and rec.query == "c=d"
    rec = strict_server.take_request()
    assert rec.path == "/" and rec.query is None


def test_mock_server_rejects_garbage_with_400(strict_server: MockServer) -> None:
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"this is not http\r\n\r\n")
        data = _recv_until_eof(sock)
    assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert strict_server.request_count == 0


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
        b"GET /  HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_mock_server_rejects_bad_framing_with_400(strict_server: MockServer, head: bytes) -> None:
    sock = _connect(strict_server)
    with sock:
        sock.sendall(head)
        data = _recv_until_eof(sock)
    assert data.startswith(b"HTTP/1.1 400 ")


def test_mock_server_oversized_head_gets_400(strict_server: MockServer) -> None:
    sock = _connect(strict_server)
    with sock:
        try:
            sock.sendall(b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000)
        except OSError:
            pass
        data = _recv_until_eof(sock)
    assert data.startswith(b"HTTP/1.1 400 ")


def test_mock_server_client_closing_mid_request_is_quiet(strict_server: MockServer) -> None:
    sock = _connect(strict_server)
    sock.sendall(b"GET / HTTP/1.1\r\nHost:")
    sock.close()
    sock = _connect(strict_server)
    sock.sendall(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
    sock.close()
    sock = _connect(strict_server)
    sock.close()
    strict_server.shutdown()
    assert strict_server.errors == []
    assert strict_server.request_count == 0


# --- response building -------------------------------------------------------------------------------


def test_mock_server_response_headers_in_order_with_repeats(strict_server: MockServer) -> None:
    strict_server.enqueue(
        MockResponse(200, headers=[("Set-Cookie", "a=1"), ("X", "y"), ("Set-Cookie", "b=2")])
    )
    sock = _connect(strict_server)
    with sock:
        head, _ = _exchange(sock, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert head == (
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX: y\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n"
    )


def test_mock_server_content_length_rules(strict_server: MockServer) -> None:
    strict_server.enqueue(
        MockResponse(200, reason="Fine", body=b"abc"),
        MockResponse(204),
        MockResponse(599, headers={"Content-Length": "3"}, body=b"abc"),
        MockResponse(200, body=b"abc", add_content_length=False, policy=SocketPolicy.CLOSE_AFTER_RESPONSE),
    )
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        assert _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf) == (
            b"HTTP/1.1 200 Fine\r\nContent-Length: 3\r\n\r\n",
            b"abc",
        )
        assert _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf) == (b"HTTP/1.1 204 No Content\r\n\r\n", b"")
        assert _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf) == (
            b"HTTP/1.1 599 \r\nContent-Length: 3\r\n\r\n",
            b"abc",
        )
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert bytes(buf) + _recv_until_eof(sock) == b"HTTP/1.1 200 OK\r\n\r\nabc"


def test_mock_server_head_request_has_no_body(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"hello"), MockResponse(200, body=b"next"))
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
        assert _recv_head(sock, buf) == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
        # the next response follows immediately: no body bytes were written for the HEAD
        assert _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf)[1] == b"next"


def test_mock_server_chunked_response_with_trailers(strict_server: MockServer) -> None:
    strict_server.enqueue(
        MockResponse(
            200,
            body=b"hello world",
            chunked=True,
            chunk_size=4,
            trailers={"X-Checksum": "abc"},
            policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
        )
    )
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        data = _recv_until_eof(sock)
    assert data == (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4\r\nhell\r\n4\r\no wo\r\n3\r\nrld\r\n0\r\nX-Checksum: abc\r\n\r\n"
    )


def test_mock_server_chunked_response_read_by_http_client(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"x" * 1000, chunked=True, chunk_size=7))
    strict_server.enqueue(MockResponse(200, body=b"", chunked=True))
    assert _get(strict_server) == (200, b"x" * 1000)
    assert _get(strict_server) == (200, b"")


def test_mock_server_informational_heads(strict_server: MockServer) -> None:
    strict_server.enqueue(
        MockResponse(
            200,
            body=b"ok",
            informational=[(103, {"Link": "</style.css>; rel=preload"}), (102, None)],
        )
    )
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert _recv_head(sock, buf) == b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        assert _recv_head(sock, buf) == b"HTTP/1.1 102 Processing\r\n\r\n"
        assert _recv_head(sock, buf) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
        assert _recv_exact(sock, buf, 2) == b"ok"


def test_mock_server_raw_bytes(strict_server: MockServer) -> None:
    raw = b"HTTP/1.1 200 Whatever\r\nX-Odd:   spaced  \r\nContent-Length: 2\r\n\r\nhi"
    strict_server.enqueue(
        MockResponse(raw=raw), MockResponse(raw=b"garbage", policy=SocketPolicy.CLOSE_AFTER_RESPONSE)
    )
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        head, body = _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf)
        assert head + body == raw
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert bytes(buf) + _recv_until_eof(sock) == b"garbage"


def test_mock_server_throttle_and_delays(strict_server: MockServer) -> None:
    body = bytes(range(256)) * 4
    strict_server.enqueue(
        MockResponse(200, body=body, throttle=(256, 0.03), head_delay=0.05, body_delay=0.05)
    )
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        started = time.monotonic()
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        head = _recv_head(sock, buf)
        got_head = time.monotonic()
        received = _recv_exact(sock, buf, _content_length(head))
        done = time.monotonic()
    assert received == body
    # lower bounds only: the server must have waited at least as long as it was told to
    assert got_head - started >= 0.04
    assert done - started >= 0.05 + 0.05 + 3 * 0.03 - 0.02


def test_mock_server_response_object_is_immutable() -> None:
    resp = MockResponse(200, headers={"A": 1}, body="é")
    assert resp.body == "é".encode()
    assert resp.headers == [("A", "1")]
    assert resp.header("a") == "1"
    assert resp.reason == "OK"
    with pytest.raises(AttributeError):
        resp.status = 500
    with pytest.raises(ValueError):
        MockResponse(chunk_size=0)


# --- socket policies -------------------------------------------------------------------------------


def test_mock_server_close_after_response(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"bye", policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert _recv_until_eof(sock) == b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye"


def test_mock_server_request_connection_close_ends_connection(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"a"), MockResponse(200, body=b"b"))
    for request in (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", b"GET / HTTP/1.0\r\n\r\n"):
        sock = _connect(strict_server)
        with sock:
            sock.sendall(request)
            assert _recv_until_eof(sock).endswith(b"\r\n\r\n" + (b"a" if b"1.1" in request else b"b"))


def test_mock_server_disconnect_at_start(strict_server: MockServer) -> None:
    strict_server.enqueue(
        MockResponse(policy=SocketPolicy.DISCONNECT_AT_START), MockResponse(200, body=b"second")
    )
    sock = _connect(strict_server)
    with sock:
        try:
            data = _recv_until_eof(sock)
        except ConnectionResetError:
            data = b""
    assert data == b""
    assert _get(strict_server) == (200, b"second")
    assert strict_server.connection_count == 2
    assert strict_server.request_count == 1


def test_mock_server_disconnect_after_request(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        assert _recv_until_eof(sock) == b""
    assert strict_server.take_request().body == b"hi"


def test_mock_server_no_response_keeps_socket_open(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert strict_server.take_request().path == "/"
        sock.settimeout(0.2)
        with pytest.raises(socket.timeout):
            sock.recv(1)
        sock.settimeout(TIMEOUT)
        strict_server.shutdown()
        assert _recv_until_eof(sock) == b""


def test_mock_server_stall_body(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"0123456789", policy=SocketPolicy.STALL_BODY))
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert _recv_head(sock, buf) == b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
        assert _recv_exact(sock, buf, 5) == b"01234"
        sock.settimeout(0.2)
        with pytest.raises(socket.timeout):
            sock.recv(1)


def test_mock_server_reset_after_request(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(policy=SocketPolicy.RESET_AFTER_REQUEST))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        with pytest.raises(ConnectionResetError):
            _recv_until_eof(sock)
    assert strict_server.request_count == 1


def test_mock_server_expect_continue(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"stored"))
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        sock.sendall(b"PUT /f HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        assert _recv_head(sock, buf) == b"HTTP/1.1 100 Continue\r\n\r\n"
        head, body = _exchange(sock, b"data", buf)
    assert body == b"stored"
    assert strict_server.take_request().body == b"data"


def test_mock_server_expect_continue_reject(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(417, body=b"no", policy=SocketPolicy.EXPECT_CONTINUE_REJECT))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"PUT /f HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        data = _recv_until_eof(sock)
    assert data == b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 2\r\n\r\nno"
    rec = strict_server.take_request()
    assert rec.method == "PUT" and rec.body == b""


def test_mock_server_shutdown_output_at_end(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, body=b"half", policy=SocketPolicy.SHUTDOWN_OUTPUT_AT_END))
    sock = _connect(strict_server)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert _recv_until_eof(sock).endswith(b"\r\n\r\nhalf")
        # the server only half-closed: our writes still succeed
        sock.sendall(b"more")
        sock.shutdown(socket.SHUT_WR)


# --- shutdown --------------------------------------------------------------------------------------


def test_mock_server_shutdown_with_stalled_connections_is_fast() -> None:
    server = MockServer()
    server.start()
    server.enqueue(
        MockResponse(policy=SocketPolicy.NO_RESPONSE),
        MockResponse(200, body=b"x" * 100, policy=SocketPolicy.STALL_BODY),
        MockResponse(200, head_delay=60),
    )
    socks = [_connect(server) for _ in range(4)]
    try:
        for sock in socks[:3]:
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        socks[3].sendall(b"GET / HTTP/1.1\r\nHost:")  # half a head
        for _ in range(3):
            server.take_request(timeout=TIMEOUT)
        started = time.monotonic()
        server.shutdown()
        elapsed = time.monotonic() - started
        server.shutdown()  # idempotent
    finally:
        for sock in socks:
            sock.close()
    assert elapsed < 0.5
    assert server.errors == []
    assert not [t for t in threading.enumerate() if t.name.startswith(f"MockServer-conn-{server.port}-")]
    with pytest.raises(OSError):
        _connect(server).close()


def test_mock_server_shutdown_before_start_is_noop() -> None:
    server = MockServer()
    server.shutdown()
    with pytest.raises(RuntimeError):
        server.client_ssl_context()


def test_mock_server_url() -> None:
    with MockServer() as server:
        assert server.url("/p?q=1") == f"http://127.0.0.1:{server.port}/p?q=1"
        assert server.url("x") == f"http://127.0.0.1:{server.port}/x"
        assert server.url(host="localhost") == f"http://localhost:{server.port}/"
        assert server.port > 0


# --- IPv6 ------------------------------------------------------------------------------------------


def _has_ipv6() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback")
def test_mock_server_ipv6() -> None:
    with MockServer(host="::1") as server:
        assert server.url("/v6") == f"http://[::1]:{server.port}/v6"
        server.enqueue(MockResponse(200, body=b"six"))
        assert _get(server, "/v6") == (200, b"six")
        assert server.take_request().path == "/v6"


# --- TLS -------------------------------------------------------------------------------------------


def _https_get(server: MockServer, host: str, ctx: ssl.SSLContext, path: str = "/") -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection(host, server.port, timeout=TIMEOUT, context=ctx)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_mock_server_tls_with_generated_ca(strict_tls_server: MockServer) -> None:
    strict_tls_server.enqueue(MockResponse(200, body=b"secure"), MockResponse(200, body=b"again"))
    assert strict_tls_server.url("/s").startswith("https://127.0.0.1:")
    ctx = strict_tls_server.client_ssl_context()
    assert _https_get(strict_tls_server, "127.0.0.1", ctx, "/s") == (200, b"secure")
    assert _https_get(strict_tls_server, "localhost", ctx) == (200, b"again")
    first, second = strict_tls_server.take_request(), strict_tls_server.take_request()
    assert first.tls and second.tls
    assert first.server_name is None  # no SNI for IP addresses
    assert second.server_name == "localhost"


def test_mock_server_tls_ca_path_is_pem(strict_tls_server: MockServer) -> None:
    assert strict_tls_server.ca_path is not None
    ctx = ssl.create_default_context(cafile=strict_tls_server.ca_path)
    strict_tls_server.enqueue(MockResponse(200, body=b"pem"))
    assert _https_get(strict_tls_server, "127.0.0.1", ctx) == (200, b"pem")


def test_mock_server_tls_hostname_verification_fails_for_other_names(strict_tls_server: MockServer) -> None:
    ctx = strict_tls_server.client_ssl_context()
    raw = _connect(strict_tls_server)
    with raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(raw, server_hostname="example.com")


def test_mock_server_tls_untrusted_client_fails(strict_tls_server: MockServer) -> None:
    trustme = pytest.importorskip("trustme")
    other = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    trustme.CA().configure_trust(other)
    raw = _connect(strict_tls_server)
    with raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            other.wrap_socket(raw, server_hostname="localhost")


def test_mock_server_tls_shares_ca_between_servers(tls_server_ca: object) -> None:
    with MockServer(tls=True, ca=tls_server_ca) as a, MockServer(tls=True, ca=tls_server_ca) as b:  # type: ignore[arg-type]
        ctx = a.client_ssl_context()
        a.enqueue(MockResponse(200, body=b"a"))
        b.enqueue(MockResponse(200, body=b"b"))
        assert _https_get(a, "127.0.0.1", ctx) == (200, b"a")
        assert _https_get(b, "127.0.0.1", ctx) == (200, b"b")
        ca_path = a.ca_path
    assert ca_path is not None
    import os

    assert not os.path.exists(ca_path)


@pytest.mark.parametrize("name", ["api.example.test", "app.test", "example.test", "doh.test"])
def test_mock_server_tls_test_names(strict_tls_server: MockServer, name: str) -> None:
    strict_tls_server.enqueue(MockResponse(200, body=b"named"))
    ctx = strict_tls_server.client_ssl_context()
    raw = _connect(strict_tls_server)
    with ctx.wrap_socket(raw, server_hostname=name) as tls:
        _, body = _exchange(tls, b"GET / HTTP/1.1\r\nHost: " + name.encode() + b"\r\n\r\n")
    assert body == b"named"
    assert strict_tls_server.take_request().server_name == name


@pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 loopback")
def test_mock_server_tls_ipv6(tls_server_ca: object) -> None:
    with MockServer(tls=True, host="::1", ca=tls_server_ca) as server:  # type: ignore[arg-type]
        server.enqueue(MockResponse(200, body=b"v6"))
        assert _https_get(server, "::1", server.client_ssl_context()) == (200, b"v6")


def test_mock_server_tunnel_connect_then_tls(strict_tls_server: MockServer) -> None:
    strict_tls_server.enqueue(
        MockResponse(200, reason="Connection established", tunnel=True, add_content_length=False),
        MockResponse(200, body=b"inside"),
    )
    raw = _connect(strict_tls_server)
    with raw:
        buf = bytearray()
        raw.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
        assert _recv_head(raw, buf) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        assert not buf
        tls = strict_tls_server.client_ssl_context().wrap_socket(raw, server_hostname="origin.test")
        with tls:
            _, body = _exchange(tls, b"GET /in HTTP/1.1\r\nHost: origin.test\r\n\r\n")
    assert body == b"inside"
    connect, inner = strict_tls_server.take_request(), strict_tls_server.take_request()
    assert connect.method == "CONNECT" and connect.target == "origin.test:443"
    assert connect.path == "" and connect.query is None and connect.tls is False
    assert inner.path == "/in" and inner.tls and inner.server_name == "origin.test"
    assert (inner.connection_index, inner.sequence_number) == (0, 1)


def test_mock_server_plain_tunnel_keeps_serving(strict_server: MockServer) -> None:
    strict_server.enqueue(MockResponse(200, tunnel=True), MockResponse(200, body=b"plain"))
    sock = _connect(strict_server)
    buf = bytearray()
    with sock:
        _exchange(sock, b"CONNECT h:80 HTTP/1.1\r\nHost: h:80\r\n\r\n", buf)
        assert _exchange(sock, b"GET / HTTP/1.1\r\n\r\n", buf)[1] == b"plain"


def test_mock_server_tls_shutdown_during_handshake_is_fast(strict_tls_server: MockServer) -> None:
    raw = _connect(strict_tls_server)
    with raw:
        raw.sendall(b"\x16\x03\x01")  # the start of a ClientHello, never finished
        time.sleep(0.05)
        started = time.monotonic()
        strict_tls_server.shutdown()
        assert time.monotonic() - started < 0.5


def test_mock_server_plain_answers_a_client_hello_with_400_and_closes(strict_server: MockServer) -> None:
    """A TLS client on the plain port gets what nginx sends there: a plain-text 400, then EOF."""
    raw = _connect(strict_server)
    with raw:
        raw.sendall(b"\x16\x03\x01\x00\x05hello")  # a (truncated) TLS handshake record
        data = _recv_until_eof(raw)
    assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"\r\nConnection: close\r\n" in data
    assert strict_server.request_count == 0


def test_mock_server_plain_tls_handshake_fails_fast(strict_server: MockServer) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", strict_server.port), timeout=30) as raw:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(raw, server_hostname="localhost")
