"""``RealConnection``: one socket to a route, its receive buffer and its response parser.

Compiled in place, typed by its ``.pxd``, in the compiled build. The I/O rules that keep a keep-alive request
at two system calls live here: timeouts are kernel socket options (``SO_RCVTIMEO``/``SO_SNDTIMEO``) set only
when they change, and the one receive buffer is reused for every response on the connection.

TLS cannot use kernel timeouts: CPython's ``ssl`` retries, forever, a read that one interrupted. With
the socket's own timeout instead, ``ssl`` polls before every write and tries every read before polling,
which is six system calls for a request and its response (poll, write, read that fails with EAGAIN,
poll, and the response's two reads). So a TLS connection's socket is non-blocking and ``TlsIo`` does the
waiting: a write goes straight out, and the first read after it polls first, since the response has
not arrived yet: four calls, against three for a blocking socket without a timeout. Gevent's
cooperative sockets (whenever gevent patched ``socket``) keep their own timeout, because they wait in
gevent's hub, which neither kernel timeouts nor ``poll`` reach.
"""

from __future__ import annotations

import _socket
import select
import socket
import time
from ssl import SSLSocket as _SSLSocket
from ssl import SSLWantReadError, SSLWantWriteError
from typing import TYPE_CHECKING, Any

from fastnet._internal.connection.tls import TlsInTlsSocket, keep_resumable_session
from fastnet._internal.http1.parser import ResponseParser, receive_exact
from fastnet._internal.util.kernel_timeout import set_kernel_timeout

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastnet._internal._sync.pool import RealConnectionPool
    from fastnet._internal.connection.tls import TlsSessions
    from fastnet.route import Address, Route

    _Buffer = bytes | bytearray | memoryview

__all__ = ["RECV_BUFFER_SIZE", "RealConnection", "TlsIo", "set_socket_timeouts"]

RECV_BUFFER_SIZE = 32768
# The C socket type: what a plain blocking socket (socket.socket, and ssl.SSLSocket) is an instance of,
# and gevent's cooperative socket is not (it wraps one as ``_sock``), whenever gevent patched ``socket``
_PLAIN_SOCKET = _socket.socket
_RAW_RECV = _socket.socket.recv  # never gevent's: a non-blocking peek must not wait for the socket
_monotonic = time.monotonic
_SO_RCVTIMEO = socket.SO_RCVTIMEO
_SO_SNDTIMEO = socket.SO_SNDTIMEO
_POLLIN = select.POLLIN
_POLLOUT = select.POLLOUT


class TlsIo:
    """``sendall`` and ``recv_into`` for a non-blocking TLS socket (``ssl.SSLSocket`` over a kernel
    socket), waiting in ``poll`` at most the read or the write timeout each time (0 or less: no limit);
    a wait that runs out raises ``TimeoutError`` (``socket.timeout``), as a timed-out TLS socket would.
    See the module's docstring."""

    __slots__ = ("sock", "poller", "timeout_ms", "sent", "write_timeout_ms")

    sock: _SSLSocket
    poller: select.poll
    timeout_ms: float  # poll's timeout for reads; -1: none
    sent: bool  # a write happened since the last read: the next read waits first
    write_timeout_ms: float  # poll's timeout for writes; -1: none

    def __init__(self, sock: _SSLSocket) -> None:
        sock.settimeout(0.0)
        self.sock = sock
        self.poller = select.poll()
        self.poller.register(sock.fileno(), _POLLIN)
        self.timeout_ms = -1.0
        self.write_timeout_ms = -1.0
        self.sent = False

    def set_timeout(self, seconds: float) -> None:
        """The read timeout."""
        self.timeout_ms = seconds * 1000.0 if seconds > 0 else -1.0

    def set_write_timeout(self, seconds: float) -> None:
        self.write_timeout_ms = seconds * 1000.0 if seconds > 0 else -1.0

    def sendall(self, data: _Buffer) -> None:
        sock = self.sock
        self.sent = True
        view = None
        remaining = len(data)
        while True:
            try:
                sent = sock.send(data if view is None else view)
            except SSLWantWriteError:
                self.wait(_POLLOUT, "write")
                continue
            except SSLWantReadError:
                self.wait(_POLLIN, "write")
                continue
            if sent >= remaining:
                return
            remaining -= sent
            view = (memoryview(data) if view is None else view)[sent:]

    def recv_into(self, buffer: bytearray | memoryview, nbytes: int = 0) -> int:
        sock = self.sock
        if self.sent:
            self.sent = False
            if not sock.pending():
                self.wait(_POLLIN, "read")  # the response is on its way: wait rather than try
        while True:
            try:
                if nbytes:
                    return sock.recv_into(buffer, nbytes)
                return sock.recv_into(buffer)
            except SSLWantReadError:
                self.wait(_POLLIN, "read")
            except SSLWantWriteError:
                self.wait(_POLLOUT, "read")

    def wait(self, events: int, operation: str) -> None:
        """Wait until the socket is ready for ``events``; ``TimeoutError`` when the timeout runs out."""
        poller = self.poller
        timeout_ms = self.write_timeout_ms if operation == "write" else self.timeout_ms
        if events == _POLLIN:
            ready = poller.poll(timeout_ms)
        else:
            fd = self.sock.fileno()
            poller.modify(fd, events)
            try:
                ready = poller.poll(timeout_ms)
            finally:
                poller.modify(fd, _POLLIN)
        if not ready:
            raise TimeoutError(f"The {operation} operation timed out")


class RealConnection:
    """One socket to a route, with a reusable receive buffer and its response parser.

    Created by the exchange finder once the socket is connected, tunnelled and TLS-wrapped. Timeouts
    are kernel socket options changed only when they differ from the last ones set; under gevent the
    socket's own timeout is used so waits stay cooperative.
    """

    __slots__ = (
        "sock",
        "sendall",
        "recv_into",
        "route",
        "address",
        "parser",
        "buf",
        "idle_at",
        "created_at",
        "no_new_exchanges",
        "exchange_count",
        "read_timeout",
        "write_timeout",
        "is_tls",
        "pool",
        "closed",
        "http_proxy",
        "tls_version",
        "proxy_authorization",
        "dns_time",
        "connect_time",
        "tls_time",
        "remote_address",
        "gives_tls_session",
        "tls_sessions",
        "tls_session_keys",
        "tls_io",
        "__weakref__",
    )

    # Any: duck-typed, a socket.socket, ssl.SSLSocket, TlsInTlsSocket or gevent's socket (None on an
    # AsyncRealConnection); the TLS-only attributes are read under ``except AttributeError``
    sock: Any
    sendall: Callable[[_Buffer], None]  # the socket's, or its TlsIo's
    recv_into: Callable[[bytearray | memoryview], int]
    route: Route | None
    address: Address
    parser: ResponseParser
    buf: bytearray
    idle_at: float
    created_at: float
    no_new_exchanges: bool
    exchange_count: int
    read_timeout: float
    write_timeout: float
    is_tls: bool
    pool: RealConnectionPool | None  # the pool that counts this connection, None once it let go of it
    closed: bool
    http_proxy: bool  # requests go to an HTTP proxy in absolute form (no tunnel)
    tls_version: str | None
    proxy_authorization: str | None
    # how long opening this connection took, by phase (seconds; for response.timings)
    dns_time: float
    connect_time: float
    tls_time: float
    remote_address: tuple[str, int] | None  # where the socket is connected (a proxy's, through a proxy)
    # TLS session resumption: set (by the finder) on a new TLS connection until the pool's release has
    # read its sessions into ``tls_sessions``, one key per TLS layer of ``sock``, innermost first
    gives_tls_session: bool
    tls_sessions: TlsSessions | None
    tls_session_keys: tuple[tuple[str, int], ...]
    tls_io: TlsIo | None  # the I/O of a non-blocking TLS socket (see the module's docstring)

    def __init__(
        self,
        sock: socket.socket | TlsInTlsSocket,
        route: Route | None,
        address: Address,
        is_tls: bool = False,
        http_proxy: bool = False,
    ) -> None:
        self.sock = sock
        if isinstance(sock, _SSLSocket) and isinstance(sock, _PLAIN_SOCKET):  # the stdlib's, not gevent's
            tls_io = self.tls_io = TlsIo(sock)
            self.sendall = tls_io.sendall
            self.recv_into = tls_io.recv_into
        else:
            self.tls_io = None
            self.sendall = sock.sendall
            self.recv_into = sock.recv_into
        self.route = route
        self.address = address
        self.parser = ResponseParser()
        self.buf = bytearray(RECV_BUFFER_SIZE)
        now = _monotonic()
        self.idle_at = now
        self.created_at = now
        self.no_new_exchanges = False
        self.exchange_count = 0
        self.read_timeout = -1.0
        self.write_timeout = -1.0
        self.is_tls = is_tls or isinstance(sock, _SSLSocket)
        self.pool = None
        self.closed = False
        self.http_proxy = http_proxy
        self.tls_version = None
        self.proxy_authorization = None
        self.dns_time = 0.0
        self.connect_time = 0.0
        self.tls_time = 0.0
        self.remote_address = None
        self.gives_tls_session = False
        self.tls_sessions = None
        self.tls_session_keys = ()

    # -- I/O: what an exchange calls (the asyncio connection has the same methods, as coroutines) --

    def write(self, data: bytes) -> None:
        """Send all of ``data`` (blocking, bounded by the write timeout)."""
        self.sendall(data)

    def drain(self) -> None:
        """Wait until written data has left (nothing to wait for on a blocking socket)."""

    def fill(self) -> int:
        """One receive into the connection's buffer, fed to the parser; 0 means the peer closed."""
        n: int = self.recv_into(self.buf)
        if n:
            self.parser.feed_from(self.buf, n)
        return n

    def receive_body(self, head: bytes, total: int) -> tuple[bytes, int]:
        """The rest of a ``total``-byte body, ``head`` of which the parser already returned, received
        straight into the ``bytes`` object returned: ``(body, received)``; ``received < total`` means the
        peer closed. Afterwards the parser stands after what was received."""
        body, received = receive_exact(self.recv_into, head, total)
        self.parser.skip_body_bytes(received - len(head))
        return body, received

    def set_timeouts(self, read_timeout: float, write_timeout: float) -> None:
        tls_io = self.tls_io
        if tls_io is not None:  # TlsIo's own waits: a read and a write timeout, as a plain socket's
            if read_timeout != self.read_timeout:
                tls_io.set_timeout(read_timeout)
                self.read_timeout = read_timeout
            if write_timeout != self.write_timeout:
                tls_io.set_write_timeout(write_timeout)
                self.write_timeout = write_timeout
            return
        sock = self.sock
        if self.is_tls or not isinstance(sock, _PLAIN_SOCKET):
            # ssl retries a read or write that a kernel timeout interrupted (a blocking socket's
            # EAGAIN looks like "want read"), forever: TLS sockets need the socket's own timeout,
            # which serves reads and writes alike (the read timeout)
            t = read_timeout if read_timeout > 0 else None
            if read_timeout != self.read_timeout:
                sock.settimeout(t)
                self.read_timeout = read_timeout
            return
        if read_timeout != self.read_timeout:
            set_kernel_timeout(sock, _SO_RCVTIMEO, read_timeout)
            self.read_timeout = read_timeout
        if write_timeout != self.write_timeout:
            set_kernel_timeout(sock, _SO_SNDTIMEO, write_timeout)
            self.write_timeout = write_timeout

    def offer_tls_sessions(self, sessions: TlsSessions, keys: tuple[tuple[str, int], ...]) -> None:
        """Have the pool's release read this new connection's TLS sessions into ``sessions`` (under
        ``keys``, one per TLS layer of the socket, innermost first), for the next connection to each
        address to resume. A connection whose every layer resumed a session has nothing to give."""
        sock = self.sock
        for _key in keys:
            if sock is None:
                break
            if not sock.session_reused:
                self.tls_sessions = sessions
                self.tls_session_keys = keys
                self.gives_tls_session = True
                return
            sock = sock.outer if isinstance(sock, TlsInTlsSocket) else None

    def give_tls_session(self) -> None:
        """Keep this connection's TLS sessions for resumption: called once, when the connection is
        released after its first exchange (a TLS 1.3 ticket arrives with the first response, not with
        the handshake, and reading ``session`` costs a serialisation, so never per request). A layer
        that was itself resumed gives nothing: the session it resumed stays."""
        if self.exchange_count == 0:
            return  # no response yet: no ticket to read (the connection is about to close anyway)
        self.gives_tls_session = False
        sessions = self.tls_sessions
        self.tls_sessions = None
        if sessions is None:
            return
        sock = self.sock
        for key in self.tls_session_keys:
            if sock is None:
                break
            try:
                if not sock.session_reused:
                    keep_resumable_session(sessions, key, sock)
            except (AttributeError, OSError, ValueError):
                break  # not a TLS socket, or closed
            sock = sock.outer if isinstance(sock, TlsInTlsSocket) else None

    def is_healthy(self) -> bool:
        """False when the peer closed (or sent unexpected bytes) while the connection was idle."""
        if self.closed:
            return False
        sock = self.sock
        raw = sock
        if not isinstance(raw, _PLAIN_SOCKET):
            raw = getattr(sock, "_sock", sock)  # gevent's cooperative socket: peek at the one it wraps
        try:
            # the raw socket's recv: SSLSocket.recv refuses flags; a TLS peer's close_notify is data here
            data = _RAW_RECV(raw, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        except Exception:  # ssl.SSLWantReadError and friends: nothing to read
            return True
        # EOF or stray bytes (a TLS close_notify shows up as data): either way, not reusable
        return False if data == b"" or not self.is_tls else _tls_peek_healthy(sock)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.no_new_exchanges = True
        try:
            self.sock.close()
        except OSError:
            pass

    def shutdown(self) -> None:
        """Wake any thread blocked on this socket (cancel), then close it."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close()

    def __repr__(self) -> str:
        return f"<RealConnection {self.route}>"


def _tls_peek_healthy(sock: _SSLSocket | TlsInTlsSocket) -> bool:
    # For TLS, readable bytes while idle are usually a close_notify alert or a session ticket;
    # tickets arrive right after the handshake (TLS 1.3), so only treat "pending" as healthy.
    try:
        return bool(sock.pending() > 0)
    except (AttributeError, OSError):
        return False


def set_socket_timeouts(sock: socket.socket, seconds: float) -> None:
    """Both kernel timeouts of a plain TCP socket (used while connecting and during handshakes); a
    cooperative (gevent) socket gets its own timeout as well, since it never blocks in the kernel."""
    set_kernel_timeout(sock, _SO_RCVTIMEO, seconds)
    set_kernel_timeout(sock, _SO_SNDTIMEO, seconds)
    if not isinstance(sock, _PLAIN_SOCKET):
        sock.settimeout(seconds if seconds > 0 else None)
