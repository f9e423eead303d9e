"""Connect, read, write and call timeouts, and cancel() from another thread, on real loopback sockets.
Every error is a typed fastnet error that names its URL and phase; timeouts are also builtins'."""

from __future__ import annotations

import builtins
import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy, _tls
from tests.support.clients import make_fast_client
from tests.support.fakes import FakeDns

pytestmark = pytest.mark.both_clients


@pytest.fixture
def blackhole() -> Iterator[tuple[str, int]]:
    """A loopback address whose SYNs go unanswered: a listen(0) socket whose accept queue is full."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address = listener.getsockname()
        for _ in range(16):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            fillers.append(filler)
            filler.setblocking(False)
            filler.connect_ex(address)
            _, writable, _ = select.select([], [filler], [], 0.3)
            if not writable:
                break  # this connect hangs: the next ones will too
        else:  # pragma: no cover - kernels that never drop SYNs
            pytest.skip("could not fill the accept queue of a listen(0) socket")
        yield address
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def _assert_located(exc: fastnet.NetworkError, url: str, phase: str) -> None:
    assert exc.url is not None and str(exc.url) == url
    assert exc.phase == phase
    assert phase in str(exc)


def test_timeouts_connect_timeout_to_blackhole(blackhole: tuple[str, int]) -> None:
    url = f"http://{blackhole[0]}:{blackhole[1]}/"
    started = time.monotonic()
    with make_fast_client(connect_timeout=0.3) as client:
        with pytest.raises(fastnet.ConnectTimeout) as info:
            client.get(url)
    assert time.monotonic() - started < 5
    exc = info.value
    assert isinstance(exc, builtins.TimeoutError) and isinstance(exc, fastnet.TimeoutError)
    assert isinstance(exc, fastnet.NetworkError) and isinstance(exc, OSError)
    _assert_located(exc, url, "connect")


def test_timeouts_connect_timeout_to_a_proxy_names_the_proxy(blackhole: tuple[str, int]) -> None:
    proxy = fastnet.Proxy.http(*blackhole)
    with make_fast_client(connect_timeout=0.3, proxy=proxy) as client:
        with pytest.raises(fastnet.ConnectTimeout) as info:
            client.get("http://origin.test/p?q=1")
    assert str(info.value) == (
        f"Connect to proxy {blackhole[0]}:{blackhole[1]} timed out after 0.3 s (connect http://origin.test/p)"
    )
    assert str(info.value.url) == "http://origin.test/p?q=1"


def test_timeouts_connection_refused_is_connect_error() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    url = f"http://127.0.0.1:{port}/"
    with make_fast_client() as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get(url)
    assert isinstance(info.value, ConnectionError)
    _assert_located(info.value, url, "connect")
    assert info.value.attempts and info.value.attempts[0][0] is not None


def test_timeouts_unknown_host() -> None:
    with make_fast_client(dns=FakeDns({})) as client:
        with pytest.raises(fastnet.UnknownHostError) as info:
            client.get("http://nowhere.test/")
    assert str(info.value.url) == "http://nowhere.test/"


def test_timeouts_read_timeout_no_answer(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client(read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout) as info:
            client.get(server.url("/slow"))
        assert client.connection_pool.connection_count() == 0
    assert isinstance(info.value, builtins.TimeoutError)
    _assert_located(info.value, server.url("/slow"), "read")
    assert server.request_count == 1  # a timeout is not retried


def test_timeouts_read_timeout_mid_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 1000, policy=SocketPolicy.STALL_BODY))
    with make_fast_client(read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout) as info:
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
    assert info.value.phase == "read"


def test_timeouts_read_timeout_mid_stream(server: MockServer) -> None:
    server.enqueue(
        MockResponse(200, body=b"x" * 1000, chunked=True, chunk_size=100, policy=SocketPolicy.STALL_BODY)
    )
    with make_fast_client(read_timeout=0.3) as client:
        with client.stream("GET", server.url("/")) as r:
            with pytest.raises(fastnet.ReadTimeout):
                for _ in r.iter_bytes():
                    pass
        assert client.connection_pool.connection_count() == 0


def test_timeouts_write_timeout() -> None:
    # a listener that never accepts: the kernel completes the handshake, then its receive buffer fills
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/upload"
        with make_fast_client(write_timeout=0.3) as client:
            with pytest.raises(fastnet.WriteTimeout) as info:
                client.post(url, body=b"x" * (64 * 1024 * 1024))
            assert client.connection_pool.connection_count() == 0
    finally:
        listener.close()
    assert isinstance(info.value, builtins.TimeoutError)
    _assert_located(info.value, url, "write")


@contextlib.contextmanager
def _server_that_stops_reading(tls: bool) -> Iterator[tuple[str, str | None]]:
    """``(url, ca_path)`` of a loopback server that takes the connection (and the TLS handshake), then
    neither reads nor answers: an upload fills its small receive buffer and stalls."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # inherited by accepted sockets
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    if not tls:  # the kernel completes the handshake; nobody ever accepts
        try:
            yield f"http://127.0.0.1:{port}/upload", None
        finally:
            listener.close()
        return
    ca = _tls.new_ca()
    context = _tls.server_context(ca)
    done = threading.Event()
    accepted: list[socket.socket] = []

    def serve() -> None:
        listener.settimeout(10)
        try:
            conn, _ = listener.accept()
            conn.settimeout(10)
            accepted.append(context.wrap_socket(conn, server_side=True))  # the handshake
        except OSError:
            return
        done.wait(30)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{port}/upload", _tls.write_ca_pem(ca)
    finally:
        done.set()
        thread.join(10)
        for conn in accepted:
            conn.close()
        listener.close()


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.parametrize("read_timeout", [None, 5], ids=["no-read-timeout", "read-timeout-5"])
def test_timeouts_write_timeout_when_the_server_neither_reads_nor_answers(
    tls: bool, read_timeout: float | None
) -> None:
    """After a write timed out the exchange waits for an early answer (a 413) only as long as the
    shorter of the two timeouts: the write timeout surfaces soon after it ran out, with or without a
    read timeout. (call_timeout only keeps a regression from hanging the suite.)"""
    with _server_that_stops_reading(tls) as (url, ca_path):
        options: dict[str, Any] = {"write_timeout": 0.3, "read_timeout": read_timeout, "call_timeout": 15}
        if ca_path is not None:
            options["verify"] = ca_path
        with make_fast_client(**options) as client:
            started = time.monotonic()
            with pytest.raises(fastnet.WriteTimeout) as info:
                client.post(url, body=b"x" * (64 * 1024 * 1024))
            elapsed = time.monotonic() - started
            assert client.connection_pool.connection_count() == 0
    # does not hang: before the fix the wait took the whole read timeout more (5.3 s or longer), or forever
    assert elapsed < 4.5
    _assert_located(info.value, url, "write")


def test_timeouts_call_timeout_covers_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 2000, throttle=(100, 0.1)))  # a 2 s body
    started = time.monotonic()
    with make_fast_client(call_timeout=0.5) as client:
        with pytest.raises(fastnet.CallTimeout) as info:
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
    assert time.monotonic() - started < 1.9
    assert isinstance(info.value, builtins.TimeoutError)
    assert str(info.value.url) == server.url("/")


def test_timeouts_call_timeout_covers_streamed_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 2000, throttle=(100, 0.1)))
    with make_fast_client(call_timeout=0.5) as client:
        r = client.stream("GET", server.url("/"))  # the head arrives at once
        with pytest.raises(fastnet.CallTimeout):
            r.read()
        r.close()
        assert client.connection_pool.connection_count() == 0


def test_timeouts_call_timeout_while_resolving_is_a_call_timeout(server: MockServer) -> None:
    class SlowDns:
        def lookup(self, host: str) -> list[str]:
            time.sleep(0.6)  # the watchdog cancels the call meanwhile; the finder sees it next
            return ["127.0.0.1"]

    with make_fast_client(call_timeout=0.2, dns=SlowDns()) as client:
        with pytest.raises(fastnet.CallTimeout) as info:
            client.get(server.url("/", host="app.test"))
    assert isinstance(info.value, builtins.TimeoutError)
    assert server.request_count == 0


def test_timeouts_call_timeout_not_hit(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"quick"), MockResponse(200, body=b"again"))
    with make_fast_client(call_timeout=0.5) as client:
        assert client.get(server.url("/")).content == b"quick"
        time.sleep(0.6)  # the deadline of a finished call must not touch the pooled connection
        assert client.get(server.url("/")).content == b"again"
    assert server.take_request().connection_index == server.take_request().connection_index


def _cancel_later(call: fastnet.Call, delay: float) -> threading.Timer:
    timer = threading.Timer(delay, call.cancel)
    timer.start()
    return timer


def test_cancel_from_another_thread_while_waiting_for_head(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client(read_timeout=10) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        timer = _cancel_later(call, 0.2)
        started = time.monotonic()
        try:
            with pytest.raises(fastnet.CanceledError) as info:
                call.execute()
        finally:
            timer.join()
        assert time.monotonic() - started < 5
        assert call.is_canceled
        assert client.connection_pool.connection_count() == 0
    assert str(info.value.url) == server.url("/")


def test_cancel_from_another_thread_while_reading_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 5000, policy=SocketPolicy.STALL_BODY))
    with make_fast_client(read_timeout=10) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        response = call.execute()
        timer = _cancel_later(call, 0.2)
        try:
            with pytest.raises(fastnet.CanceledError):
                response.read()
        finally:
            timer.join()
            response.close()
        assert client.connection_pool.connection_count() == 0


def test_cancel_while_connecting(blackhole: tuple[str, int]) -> None:
    timers: list[threading.Timer] = []

    class CancelOnConnect(fastnet.EventListener):
        # cancel once the connect is under way (a fixed delay from execute() races with route planning)
        def connect_start(self, call: Any, route: Any) -> None:
            timer = threading.Timer(0.2, call.cancel)
            timers.append(timer)
            timer.start()

    with make_fast_client(connect_timeout=10, event_listener=CancelOnConnect()) as client:
        call = client.new_call(fastnet.Request("GET", f"http://{blackhole[0]}:{blackhole[1]}/"))
        started = time.monotonic()
        try:
            with pytest.raises(fastnet.CanceledError):
                call.execute()
        finally:
            for timer in timers:
                timer.join()
        assert time.monotonic() - started < 5
        assert len(timers) == 1


def test_cancel_after_completion_is_harmless(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"done"), MockResponse(200))
    with make_fast_client() as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        response = call.execute()
        assert response.content == b"done"
        call.cancel()
        assert call.is_canceled
        assert client.connection_pool.idle_connection_count() == 1
        client.get(server.url("/"))
    assert server.take_request().connection_index == server.take_request().connection_index


def test_timeouts_errors_can_be_built_from_a_message() -> None:
    for cls in (
        fastnet.ConnectTimeout,
        fastnet.ReadTimeout,
        fastnet.WriteTimeout,
        fastnet.PoolTimeout,
        fastnet.CallTimeout,
        fastnet.CanceledError,
        fastnet.ProtocolError,
    ):
        exc = cls("message")
        assert str(exc) == "message" and exc.url is None
    located = fastnet.ReadTimeout("slow", url=fastnet.URL("http://u:p@h/x?secret"), phase="read")
    assert str(located) == "slow (read http://h/x)"
