"""RetryAndFollowUpInterceptor: ``recover()`` (which network failures the core retries by itself), the
408/503 status retries, and redirects (the method table, Location resolution, credential stripping,
limits and bad input)."""

from __future__ import annotations

import contextlib
import io
import select
import socket
import threading
import time

import h11
import pytest

import fastnet
from fastnet import _compat
from fastnet._internal._async.real_connection import AsyncRealConnection
from fastnet._internal._sync.exchange_finder import PROBE_IDLE_AFTER
from fastnet._internal._sync.retry_follow_up import RetryAndFollowUpInterceptor
from fastnet.testing import MockResponse, MockServer, RecordedRequest, SocketPolicy
from tests.support.clients import assert_pool_clean, ca_path, make_client, route_of
from tests.support.fakes import FakeDns

pytestmark = pytest.mark.both_clients

DROP = SocketPolicy.DISCONNECT_AFTER_REQUEST


class Decisions(fastnet.EventListener):
    def __init__(self) -> None:
        self.retry: list[tuple[str, bool]] = []

    def retry_decision(self, call, error, retry):
        self.retry.append((type(error).__name__, retry))


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
        with pytest.raises(fastnet.ConnectionClosedError):
            client.post(server.url("/orders"), body=b"order-1")
        assert server.request_count == 2  # warm-up + the one attempt
        assert events.retry == [("ConnectionClosedError", False)]
        assert_pool_clean(client)


def test_recover_one_shot_body_not_retried_on_stale_connection(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(201))
        with pytest.raises(fastnet.ConnectionClosedError):
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
        with pytest.raises(fastnet.ConnectionClosedError) as info:
            client.get(server.url("/"))
        # stale connection recovered once; the fresh one then failed with no other route
        assert len(info.value.recovered) == 1
        assert isinstance(info.value.recovered[0], fastnet.ConnectionClosedError)
        assert_pool_clean(client)


# ------------------------------------------------------------------------------------- closed while idle


class Recorded(fastnet.EventListener):
    def __init__(self) -> None:
        self.retry: list[tuple[str, bool]] = []
        self.connect_failures: list[str] = []

    def retry_decision(self, call, error, retry):
        self.retry.append((type(error).__name__, retry))

    def connect_failed(self, call, route, error):
        self.connect_failures.append(type(error).__name__)


class ClosesWhenIdle:
    """A raw loopback server (h11 on the server side). Its first connection answers one request with
    keep-alive, then sends a FIN (``shutdown(SHUT_WR)``) and goes on reading: whatever the client still
    writes on it lands in ``late``. Later connections answer every request. ``requests`` holds
    ``(connection index, body)`` of each request answered."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/"
        self.requests: list[tuple[int, bytes]] = []
        self.late: list[bytes] = []
        self.threads: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> ClosesWhenIdle:
        self.acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self.listener.close()
        self.acceptor.join(10)
        for thread in self.threads:
            thread.join(10)

    def _accept(self) -> None:
        for index in range(10):
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(index, sock), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, index: int, sock: socket.socket) -> None:
        sock.settimeout(10)
        conn = h11.Connection(h11.SERVER)
        body = b""
        with sock:
            for _ in range(10_000):
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = sock.recv(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    self.requests.append((index, body))
                    payload = str(index).encode()
                    sock.sendall(
                        conn.send(h11.Response(status_code=200, headers=[("Content-Length", "1")]))
                        + conn.send(h11.Data(data=payload))
                        + conn.send(h11.EndOfMessage())
                    )
                    if index == 0:
                        sock.shutdown(socket.SHUT_WR)
                        for _ in range(10_000):  # until the client closes it
                            data = sock.recv(65536)
                            if not data:
                                return
                            self.late.append(data)
                        return
                    conn.start_next_cycle()
                    body = b""
                elif not isinstance(event, h11.Request):
                    return


def wait_until_the_fin_arrived(client: fastnet.Client) -> None:
    """Until the client's pooled connection has the server's FIN: readable for the blocking client,
    seen by the transport for the asyncio one; then "a moment later" (10 ms: past the probe threshold)."""
    real_pool = client.connection_pool._real
    (conn,) = [conn for stack in real_pool.idle.values() for conn in stack]
    if isinstance(conn, AsyncRealConnection):
        for _ in range(1000):
            if conn.eof:
                break
            time.sleep(0.005)
        assert conn.eof
    else:
        readable, _, _ = select.select([conn.sock], [], [], 5)
        assert readable
    assert PROBE_IDLE_AFTER < 0.01
    time.sleep(0.01)


@pytest.mark.parametrize("method", ["GET", "POST one-shot", "POST"])
def test_recover_connection_closed_while_idle_is_replaced_not_retried(method):
    events = Recorded()
    with ClosesWhenIdle() as server, make_client(event_listener=events) as client:
        assert client.get(server.url).content == b"0"
        wait_until_the_fin_arrived(client)
        if method == "GET":
            r = client.get(server.url)
        elif method == "POST":
            r = client.post(server.url, body=b"order-1")
        else:
            r = client.post(server.url, body=iter([b"one-", b"shot"]))
        assert r.content == b"1"
        assert_pool_clean(client)
    assert [index for index, _ in server.requests] == [0, 1]
    assert server.late == []  # nothing was written on the closed connection
    assert server.requests[1][1] == {"GET": b"", "POST": b"order-1", "POST one-shot": b"one-shot"}[method]
    assert events.retry == [] and events.connect_failures == []


@pytest.mark.parametrize("method", ["GET", "POST one-shot"])
def test_recover_tls_connection_closed_while_idle_is_replaced_not_retried(tls_server: MockServer, method):
    events = Recorded()
    tls_server.enqueue(
        MockResponse(200, body=b"0", policy=SocketPolicy.SHUTDOWN_OUTPUT_AT_END), MockResponse(200, body=b"1")
    )
    with make_client(verify=tls_server.ca_path, event_listener=events) as client:
        assert client.get(tls_server.url("/")).content == b"0"
        wait_until_the_fin_arrived(client)
        if method == "GET":
            r = client.get(tls_server.url("/"))
        else:
            r = client.post(tls_server.url("/"), body=iter([b"one-", b"shot"]))
        assert r.content == b"1"
    assert [tls_server.take_request().connection_index for _ in range(2)] == [0, 1]
    assert events.retry == [] and events.connect_failures == []


# ------------------------------------------------------------------------------------------------ routes


def test_recover_fresh_connection_without_other_route_not_retried(server):
    events = Decisions()
    with make_client(event_listener=events) as client:
        server.enqueue(MockResponse(200, policy=DROP), MockResponse(200))
        with pytest.raises(fastnet.ConnectionClosedError):
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
        assert route_of(r).socket_address[0] == "127.0.0.2"
        assert_pool_clean(client)


def test_recover_one_shot_body_on_failed_route_not_retried(two_routes):
    one, two, answers = two_routes
    with make_client(dns=lambda host: answers[host], happy_eyeballs=False) as client:
        one.enqueue(MockResponse(200, policy=DROP))
        two.enqueue(MockResponse(200))
        with pytest.raises(fastnet.ConnectionClosedError):
            client.post(f"http://multi.example:{one.port}/", body=iter([b"once"]))
        assert one.request_count == 1 and two.request_count == 0
        assert_pool_clean(client)


# ------------------------------------------------------------------------------------------- never retried


def test_recover_protocol_error_not_retried(server):
    with make_client() as client:
        warm_up(client, server)
        server.enqueue(MockResponse(raw=b"HTTP/1.1 abc Nonsense\r\n\r\n"), MockResponse(200))
        with pytest.raises(fastnet.ProtocolError):
            client.get(server.url("/"))
        assert server.request_count == 2
        assert_pool_clean(client)


def test_recover_timeout_not_retried(server):
    with make_client(read_timeout=0.2) as client:
        warm_up(client, server)
        server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE), MockResponse(200))
        with pytest.raises(fastnet.ReadTimeout):
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
            with pytest.raises(fastnet.CanceledError):
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
            with pytest.raises(fastnet.ConnectError):
                client.get(f"http://127.0.0.1:{port}/")
            assert events.retry == [("ConnectError", False)]
            assert client.connection_pool.connection_count() == 0


def test_recover_certificate_failure_not_retried():
    with MockServer(tls=True) as server:
        with make_client() as client:  # default trust store: the test CA is unknown
            with pytest.raises(fastnet.TlsVerificationError):
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
    unit = "fastnet._internal._sync.retry_follow_up"
    assert RetryAndFollowUpInterceptor.__module__ == unit
    assert _compat.is_compiled(unit) is (not _compat.NO_EXTENSIONS and fastnet.compiled)
    with make_client() as client:
        kinds = {type(i).__module__ for i in client._core.interceptors}
        assert unit in kinds


# ================================================================================================= redirects

REDIRECTS = (300, 301, 302, 303, 307, 308)
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "QUERY", "FOO")


@pytest.fixture
def server2():
    with MockServer() as s:
        yield s


def redirect(location: str, status: int = 302, **headers: str) -> MockResponse:
    return MockResponse(status, headers={"Location": location, **headers}, body=b"moved")


def expected_after_redirect(method: str, status: int) -> tuple[str, bool]:
    """(method of the follow-up, whether it keeps the body), as OkHttp's redirect table has it."""
    if method in ("GET", "HEAD"):
        return method, False
    if method == "PROPFIND":
        return method, True
    if method == "QUERY":
        return ("GET", False) if status == 303 else ("QUERY", True)
    if status in (307, 308):
        return method, True
    return "GET", False


# ------------------------------------------------------------------------------------------------ table


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("method", ("GET", "HEAD") + BODY_METHODS)
def test_redirects_method_table(server, client, method, status):
    server.enqueue(redirect("/next", status), MockResponse(200, body=b"done"))
    body = None if method in ("GET", "HEAD") else b"payload"
    headers = {"Content-Type": "text/x-test", "X-Keep": "1"} if body else {"X-Keep": "1"}
    r = client.request(method, server.url("/start"), headers=headers, body=body)
    assert r.status_code == 200
    assert [p.status_code for p in r.history] == [status]
    first, second = server.take_request(), server.take_request()
    assert first.method == method and first.path == "/start"
    want_method, keeps_body = expected_after_redirect(method, status)
    assert second.method == want_method and second.path == "/next"
    assert second.header("X-Keep") == "1"
    if keeps_body:
        assert second.body == b"payload"
        assert second.header("Content-Type") == "text/x-test"
        assert second.header("Content-Length") == "7"
    else:
        assert second.body == b""
        if body:
            assert second.header("Content-Type") is None
            assert second.header("Content-Length") is None
            assert second.header("Transfer-Encoding") is None
    assert second.connection_index == first.connection_index  # same host and port: same connection
    assert_pool_clean(client)


def test_redirects_bodyless_delete_on_307_stays_bodyless(server, client):
    server.enqueue(redirect("/x", 307), MockResponse(204))
    r = client.delete(server.url("/"))
    assert r.status_code == 204
    server.take_request()
    again = server.take_request()
    assert again.method == "DELETE" and again.body == b""


def test_redirects_json_post_on_302_drops_content_type(server, client):
    server.enqueue(redirect("/x", 302), MockResponse(200))
    client.post(server.url("/"), json={"a": 1})
    assert server.take_request().header("Content-Type") == "application/json"
    second = server.take_request()
    assert second.method == "GET" and second.header("Content-Type") is None and second.body == b""


def test_redirects_one_shot_body_stops_307(server, client):
    server.enqueue(redirect("/x", 307), MockResponse(200))
    r = client.post(server.url("/"), body=iter([b"one", b"shot"]))
    assert r.status_code == 307 and r.history == []
    assert server.take_request().body == b"oneshot"
    assert server.request_count == 1
    assert_pool_clean(client)


def test_redirects_one_shot_body_on_303_becomes_get(server, client):
    server.enqueue(redirect("/x", 303), MockResponse(200))
    r = client.post(server.url("/"), body=iter([b"data"]))
    assert r.status_code == 200
    server.take_request()
    assert server.take_request().method == "GET"


# ------------------------------------------------------------------------------------------------ history


def test_redirects_history_and_prior_response(server, client):
    server.enqueue(redirect("/b", 301), redirect("/c", 302), MockResponse(200, body=b"end"))
    r = client.get(server.url("/a"))
    assert r.text == "end"
    assert [p.status_code for p in r.history] == [301, 302]
    assert [str(p.url) for p in r.history] == [server.url("/a"), server.url("/b")]
    assert r.prior_response.status_code == 302
    assert r.prior_response.headers["Location"] == "/c"
    with pytest.raises(RuntimeError):
        _ = r.prior_response.content
    assert str(r.url) == server.url("/c")


# ------------------------------------------------------------------------------------------------ Location


def test_redirects_relative_location_resolves_against_current_hop(server, client):
    server.enqueue(redirect("/dir/a/"), redirect("../b?q=1"), MockResponse(200))
    r = client.get(server.url("/start"))
    assert str(r.url) == server.url("/dir/b?q=1")
    assert [server.take_request().target for _ in range(3)] == ["/start", "/dir/a/", "/dir/b?q=1"]


def test_redirects_scheme_relative_location(server, server2, client):
    server.enqueue(redirect(f"//127.0.0.1:{server2.port}/other"))
    server2.enqueue(MockResponse(200, body=b"2"))
    r = client.get(server.url("/"))
    assert r.text == "2" and str(r.url) == server2.url("/other")


def test_redirects_location_with_spaces_is_encoded(server, client):
    server.enqueue(redirect("/a b/c d"), MockResponse(200))
    r = client.get(server.url("/"))
    assert r.status_code == 200
    server.take_request()
    assert server.take_request().target == "/a%20b/c%20d"


@pytest.mark.parametrize(
    "location",
    [
        "",
        "   ",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "ftp://127.0.0.1/x",
        "data:text/html,hi",
        "ws://127.0.0.1/x",
        "http://exa mple.com/",
        "http://" + "a" * 10_000 + "/",
        "http://[::1/",
        "http://127.0.0.1:99999/",
        "http://127.0.0.1:-1/",
        "http:///nohost",
    ],
)
def test_redirects_bad_location_returns_the_3xx(server, client, location):
    server.enqueue(redirect(location), MockResponse(200, body=b"should not be fetched"))
    r = client.get(server.url("/"))
    assert r.status_code == 302 and r.text == "moved" and r.history == []
    assert server.take_request().path == "/"
    assert_pool_clean(client)


def test_redirects_missing_location_returns_the_3xx(server, client):
    server.enqueue(MockResponse(301, body=b"no location"))
    r = client.get(server.url("/"))
    assert r.status_code == 301 and r.text == "no location"
    assert not r.is_redirect
    assert_pool_clean(client)


def _raw_redirect(location: bytes) -> MockResponse:
    return MockResponse(raw=b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("/caf\u00e9".encode(), "/caf%C3%A9"),  # raw UTF-8, as browsers, curl and requests send it
        (b"/caf%C3%A9", "/caf%C3%A9"),  # already encoded: not encoded twice
        (b"/caf\xe9", "/caf%E9"),  # a latin-1 byte: percent-encoded as it came
        ("/\u00fc/x?q=\u00e9&r=1".encode(), "/%C3%BC/x?q=%C3%A9&r=1"),
        ("/a b/\u20ac".encode(), "/a%20b/%E2%82%AC"),
    ],
)
def test_redirects_raw_location_bytes_are_percent_encoded_once(server, client, location, target):
    server.enqueue(_raw_redirect(location), MockResponse(200, body=b"there"))
    r = client.get(server.url("/"))
    assert r.text == "there"
    server.take_request()
    assert server.take_request().target == target
    assert r.url.target == target


def test_redirects_raw_utf8_location_host_is_idna_encoded(server, client):
    dns = FakeDns({"xn--bcher-kva.test": ["127.0.0.1"]})
    server.enqueue(
        _raw_redirect(f"http://b\u00fccher.test:{server.port}/caf\u00e9".encode()), MockResponse(200)
    )
    with make_client(dns=dns) as via_name:
        r = via_name.get(server.url("/"))
    assert r.url is not None
    assert r.status_code == 200 and r.url.host == "xn--bcher-kva.test"
    server.take_request()
    followed = server.take_request()
    assert followed.target == "/caf%C3%A9" and followed.header("host") == f"xn--bcher-kva.test:{server.port}"


def test_redirects_location_with_control_characters_never_crashes(server, client):
    for raw_location in (b"/a\rb", b"/a\x00b", b"/a\x7fb"):
        head = b"HTTP/1.1 302 Found\r\nLocation: " + raw_location + b"\r\nContent-Length: 0\r\n\r\n"
        server.enqueue(MockResponse(raw=head), MockResponse(200, body=b"followed"))
        try:
            r = client.get(server.url("/"))
        except fastnet.ProtocolError:
            pass  # the parser refused the header: also acceptable, no crash
        else:
            assert r.status_code == 302
            assert r.history == []
        client.connection_pool.evict_all()
        # drop whatever the server did not serve
        server.dispatcher = None
        while True:
            try:
                server.take_request(timeout=0.05)
            except TimeoutError:
                break
        assert_pool_clean(client)
        with server._lock:
            server._responses.clear()


def test_redirects_long_path_location_does_not_crash(server, client):
    server.enqueue(redirect("/" + "p" * 10_000), MockResponse(200))
    try:
        r = client.get(server.url("/"))
    except fastnet.NetworkError:
        pass
    else:
        assert r.status_code in (200, 400, 414, 431)
    assert_pool_clean(client)


def test_redirects_location_userinfo_is_not_kept_across_origins(server, server2, client):
    server.enqueue(redirect(f"http://user:pw@127.0.0.1:{server2.port}/x"))
    server2.enqueue(MockResponse(200))
    r = client.get(server.url("/"), headers={"Authorization": "Basic c2VjcmV0"})
    assert r.status_code == 200
    assert r.url.username == "" and r.url.password == ""
    rec = server2.take_request()
    assert rec.header("Authorization") is None


def test_redirects_repeated_location_last_wins(server, client):
    server.enqueue(
        MockResponse(302, headers=[("Location", "/first"), ("Location", "/second")]), MockResponse(200)
    )
    r = client.get(server.url("/"))
    assert r.url.path == "/second"


# ------------------------------------------------------------------------------------------------ credentials

SECRET_HEADERS = {
    "Authorization": "Bearer top-secret",
    "Cookie": "session=abc",
    "Proxy-Authorization": "Basic cHJveHk6cHc=",
    "X-Auth-Token": "tok",
    "X-Api-Key": "key",
    "X-Harmless": "keep-me",
}


def _assert_stripped(rec: RecordedRequest, sent_host: str | None = None) -> None:
    for name in ("Authorization", "Cookie", "Proxy-Authorization", "X-Auth-Token", "X-Api-Key"):
        assert rec.header(name) is None, name
    assert rec.header("X-Harmless") == "keep-me"
    if sent_host is not None:
        assert rec.header("Host") != sent_host


def test_redirects_strip_credentials_same_host_other_port(server, server2):
    with fastnet.Client(trust_env=False, sensitive_headers=["X-Auth-Token", "x-api-key"]) as client:
        server.enqueue(redirect(server2.url("/landing")))
        server2.enqueue(MockResponse(200))
        headers = dict(SECRET_HEADERS, Host="victim.example")
        r = client.get(server.url("/"), headers=headers)
        assert r.status_code == 200
        first = server.take_request()
        assert first.header("Authorization") == "Bearer top-secret"
        assert first.header("X-Auth-Token") == "tok"
        assert first.header("Host") == "victim.example"
        assert first.header("Proxy-Authorization") is None  # never sent to an origin at all
        second = server2.take_request()
        _assert_stripped(second, "victim.example")
        assert second.header("Host") == f"127.0.0.1:{server2.port}"
        assert_pool_clean(client)


def test_redirects_strip_credentials_http_to_https_same_host_and_port():
    with MockServer(tls=True) as server:
        with fastnet.Client(
            trust_env=False, verify=ca_path(server), sensitive_headers=["X-Auth-Token", "X-Api-Key"]
        ) as client:
            plain = f"http://127.0.0.1:{server.port}/"
            server.enqueue(redirect(server.url("/secure")), MockResponse(200, body=b"tls"))
            r = client.get(plain, headers=SECRET_HEADERS)
            assert r.url is not None
            assert r.text == "tls" and r.url.scheme == "https"
            first, second = server.take_request(), server.take_request()
            assert not first.tls and second.tls
            assert first.header("Authorization") == "Bearer top-secret"
            _assert_stripped(second)
            assert_pool_clean(client)


def test_redirects_strip_credentials_cross_host():
    with MockServer(host="127.0.0.1") as one, MockServer(host="127.0.0.2") as two:
        with fastnet.Client(trust_env=False, sensitive_headers=("X-Auth-Token", "X-Api-Key")) as client:
            one.enqueue(redirect(two.url("/")))
            two.enqueue(MockResponse(200))
            client.get(one.url("/"), headers=SECRET_HEADERS)
            _assert_stripped(two.take_request())


def test_redirects_without_sensitive_headers_option_custom_headers_travel(server, server2, client):
    # the default is OkHttp's: only the standard credential headers are dropped
    server.enqueue(redirect(server2.url("/")))
    server2.enqueue(MockResponse(200))
    client.get(server.url("/"), headers=SECRET_HEADERS)
    rec = server2.take_request()
    assert rec.header("Authorization") is None and rec.header("Cookie") is None
    assert rec.header("X-Auth-Token") == "tok"


def test_redirects_same_origin_keeps_credentials(server):
    with fastnet.Client(trust_env=False, sensitive_headers=["X-Auth-Token"]) as client:
        server.enqueue(redirect("/next"), MockResponse(200))
        client.get(server.url("/"), headers=dict(SECRET_HEADERS, Host="named.example"))
        server.take_request()
        rec = server.take_request()
        assert rec.header("Authorization") == "Bearer top-secret"
        assert rec.header("Cookie") == "session=abc"
        assert rec.header("X-Auth-Token") == "tok"
        assert rec.header("Host") == "named.example"


def test_redirects_cookie_jar_recomputed_per_hop():
    with MockServer(host="127.0.0.1") as one, MockServer(host="127.0.0.2") as two:
        jar = fastnet.MemoryCookieJar()
        with fastnet.Client(trust_env=False, cookie_jar=jar) as client:
            one.enqueue(
                MockResponse(302, headers=[("Set-Cookie", "sid=one; Path=/"), ("Location", two.url("/x"))])
            )
            two.enqueue(redirect(one.url("/back")))
            one.enqueue(MockResponse(200))
            r = client.get(one.url("/"))
            assert r.status_code == 200
            assert one.take_request().header("Cookie") is None
            assert two.take_request().header("Cookie") is None
            assert one.take_request().header("Cookie") == "sid=one"


# ------------------------------------------------------------------------------------------------ options


def test_redirects_follow_redirects_false_returns_3xx(server):
    with fastnet.Client(trust_env=False, follow_redirects=False) as client:
        server.enqueue(redirect("/x"))
        r = client.get(server.url("/"))
        assert r.status_code == 302 and r.is_redirect
        assert_pool_clean(client)


def test_redirects_per_call_override_from_interceptor(server):
    def follow(chain):
        return chain.with_follow_redirects(chain.request.header("X-Follow") == "yes").proceed(chain.request)

    with fastnet.Client(trust_env=False, follow_redirects=False, interceptors=[follow]) as client:
        server.enqueue(redirect("/x"), MockResponse(200, body=b"followed"))
        assert client.get(server.url("/"), headers={"X-Follow": "yes"}).text == "followed"
        server.enqueue(redirect("/x"))
        assert client.get(server.url("/"), headers={"X-Follow": "no"}).status_code == 302
    with fastnet.Client(trust_env=False, follow_redirects=True, interceptors=[follow]) as client:
        server.enqueue(redirect("/x"))
        assert client.get(server.url("/"), headers={"X-Follow": "no"}).status_code == 302


def test_redirects_follow_ssl_redirects_false():
    with MockServer(tls=True) as server:
        with fastnet.Client(trust_env=False, verify=ca_path(server), follow_ssl_redirects=False) as client:
            server.enqueue(redirect(server.url("/secure")))
            r = client.get(f"http://127.0.0.1:{server.port}/")
            assert r.status_code == 302
            # same scheme is still followed
            server.enqueue(redirect("/again"), MockResponse(200))
            assert client.get(server.url("/")).status_code == 200
            assert_pool_clean(client)


def test_redirects_20_follow_ups_succeed(server, client):
    for i in range(20):
        server.enqueue(redirect(f"/{i + 1}"))
    server.enqueue(MockResponse(200, body=b"twenty"))
    r = client.get(server.url("/0"))
    assert r.text == "twenty" and len(r.history) == 20
    assert_pool_clean(client)


def test_redirects_21_follow_ups_raise(server, client):
    for i in range(21):
        server.enqueue(redirect(f"/{i + 1}"))
    server.enqueue(MockResponse(200))
    with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 21"):
        client.get(server.url("/0"))
    assert sum(1 for _ in range(21) if server.take_request(timeout=1)) == 21
    with pytest.raises(TimeoutError):
        server.take_request(timeout=0.1)
    assert_pool_clean(client)


def test_redirects_max_follow_ups_option(server):
    with fastnet.Client(trust_env=False, max_follow_ups=1) as client:
        server.enqueue(redirect("/1"), MockResponse(200))
        assert client.get(server.url("/")).status_code == 200
        server.enqueue(redirect("/1"), redirect("/2"))
        with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 2"):
            client.get(server.url("/"))
        assert_pool_clean(client)


def test_redirects_loop_between_two_hosts_is_bounded(server, server2, client):
    server.dispatcher = lambda rec: redirect(server2.url("/b"))
    server2.dispatcher = lambda rec: redirect(server.url("/a"))
    with pytest.raises(fastnet.ProtocolError, match="21"):
        client.get(server.url("/a"))
    assert server.request_count + server2.request_count == 21
    assert_pool_clean(client)


def test_redirects_events_follow_up_decisions(server):
    seen = []

    class Listener(fastnet.EventListener):
        def follow_up_decision(self, call, response, next_request):
            seen.append((response.status_code, None if next_request is None else next_request.url.path))

    with fastnet.Client(trust_env=False, event_listener=Listener()) as client:
        server.enqueue(redirect("/b"), MockResponse(200))
        client.get(server.url("/a"))
    assert seen == [(302, "/b"), (200, None)]
