"""``TlsIo``: the non-blocking TLS socket's writes, reads, waits and timeouts, in both twins, against a
TLS server on loopback (trustme's certificate)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.twins import Twins

trustme = pytest.importorskip("trustme")


@pytest.fixture
def rc(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal._sync.real_connection")


@pytest.fixture(scope="module")
def ca() -> Any:
    return trustme.CA()


@pytest.fixture
def tls_peer(ca: Any) -> Iterator[Callable[[Callable[[ssl.SSLSocket], None]], ssl.SSLSocket]]:
    """``tls_peer(behave)``: a client TLS socket (handshake done, blocking) to a one-connection server
    thread that runs ``behave(server_side_socket)``."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    threads: list[threading.Thread] = []
    sockets: list[socket.socket] = []

    def start(behave: Callable[[ssl.SSLSocket], None]) -> ssl.SSLSocket:
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve() -> None:
            raw, _ = listener.accept()
            raw.settimeout(10)
            with server_context.wrap_socket(raw, server_side=True) as tls:
                try:
                    behave(tls)
                except OSError:
                    pass  # the client went away first

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        plain = socket.create_connection(listener.getsockname(), timeout=10)
        client = client_context.wrap_socket(plain, server_hostname="127.0.0.1")
        sockets.append(client)
        return client

    yield start
    for s in sockets:
        s.close()
    for thread in threads:
        thread.join(10)


def _echo(tls: ssl.SSLSocket) -> None:
    while data := tls.recv(65536):
        tls.sendall(data)


def test_tls_io_large_write_waits_for_a_slow_reader(rc: types.ModuleType, tls_peer: Any) -> None:
    # 16 MB to a peer that starts reading late: the write fills the kernel's buffers (SSLWantWriteError),
    # waits in poll and goes on; the peer answers with what it counted
    size = 16 * 1024 * 1024

    def read_late(tls: ssl.SSLSocket) -> None:
        time.sleep(0.3)
        got = 0
        while got < size and (data := tls.recv(1 << 20)):
            got += len(data)
        tls.sendall(str(got).encode())

    io = rc.TlsIo(tls_peer(read_late))
    io.set_timeout(10)
    io.sendall(memoryview(b"x" * size))
    buf = bytearray(64)
    n = io.recv_into(buf)
    assert buf[:n] == str(size).encode()


def test_tls_io_reads_at_most_nbytes(rc: types.ModuleType, tls_peer: Any) -> None:
    io = rc.TlsIo(tls_peer(_echo))
    io.set_timeout(5)
    io.sendall(b"0123456789abcdef")
    buf = bytearray(64)
    assert io.recv_into(buf, 4) == 4 and buf[:4] == b"0123"


def test_tls_io_read_timeout(rc: types.ModuleType, tls_peer: Any) -> None:
    silent = threading.Event()
    io = rc.TlsIo(tls_peer(lambda tls: silent.wait(5)))
    io.set_timeout(0.2)
    io.sendall(b"anyone there?")
    started = time.monotonic()
    with pytest.raises(socket.timeout, match="read operation timed out"):
        io.recv_into(bytearray(100))
    assert 0.15 < time.monotonic() - started < 3
    silent.set()


def test_tls_io_write_timeout_when_the_peer_does_not_read(rc: types.ModuleType, tls_peer: Any) -> None:
    stop = threading.Event()
    io = rc.TlsIo(tls_peer(lambda tls: stop.wait(10)))
    io.set_timeout(0)  # no read timeout: the write timeout alone bounds a write
    io.set_write_timeout(0.3)
    with pytest.raises(socket.timeout, match="write operation timed out"):
        io.sendall(b"x" * (64 * 1024 * 1024))  # more than the kernel's buffers hold
    stop.set()


def test_tls_io_peer_close_reads_as_eof(rc: types.ModuleType, tls_peer: Any) -> None:
    def close_after_hello(tls: ssl.SSLSocket) -> None:
        tls.recv(100)
        tls.sendall(b"bye")
        tls.unwrap()  # close_notify

    io = rc.TlsIo(tls_peer(close_after_hello))
    io.set_timeout(5)
    io.sendall(b"hello")
    buf = bytearray(100)
    assert io.recv_into(buf) == 3 and buf[:3] == b"bye"
    assert io.recv_into(buf) == 0


def test_tls_io_no_timeout_waits(rc: types.ModuleType, tls_peer: Any) -> None:
    def answer_late(tls: ssl.SSLSocket) -> None:
        tls.recv(100)
        time.sleep(0.3)
        tls.sendall(b"late")

    io = rc.TlsIo(tls_peer(answer_late))
    io.set_timeout(0)  # no limit
    io.sendall(b"?")
    buf = bytearray(100)
    assert io.recv_into(buf) == 4


def test_real_connection_uses_tls_io_for_a_stdlib_tls_socket(rc: types.ModuleType, tls_peer: Any) -> None:
    from fastnet.route import Address

    sock = tls_peer(_echo)
    conn = rc.RealConnection(sock, None, Address("https", "127.0.0.1", 443))
    assert conn.tls_io is not None and conn.is_tls
    assert sock.gettimeout() == 0.0  # non-blocking: TlsIo waits
    conn.set_timeouts(2.0, 2.0)
    conn.write(b"ping")
    assert conn.fill() == 4
    conn.close()
