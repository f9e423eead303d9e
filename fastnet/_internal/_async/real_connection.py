"""``AsyncRealConnection``: a connection driven by the running asyncio loop, for ``AsyncClient``.

Theory of operation
-------------------
It is a ``RealConnection`` (the pool, the codec and the exchange's bookkeeping see the same fields) whose
I/O methods are coroutines with the blocking ones' names and meaning: ``write``, ``drain``, ``fill``,
``receive_body``. That is what lets one exchange source serve both clients (``scripts/unasync.py``
makes the blocking exchange from the asyncio one).

The socket belongs to an asyncio transport whose protocol is a ``BufferedProtocol``: the loop reads
straight into the connection's receive buffer (no per-read registration with the selector, no copy into
a bytes object first), and ``buffer_updated`` feeds the bytes to the parser at once. ``fill()``
therefore returns at once when bytes arrived since the last call, and otherwise awaits the next
delivery, bounded by the read timeout. The parser never holds more than ``READ_HIGH_WATER`` bytes that
nobody asked for: past that, the transport stops reading until ``fill()`` is called again (a streamed
body that is not being read costs no memory).

Before HTTP starts, SOCKS and CONNECT handshakes talk raw bytes: ``raw_mode(True)`` sends what arrives
to ``recv()`` instead of the parser. ``start_tls`` upgrades the transport in place (TLS to an HTTPS
proxy, then TLS to the origin inside it).

Errors are the blocking socket's: ``OSError`` subclasses (a peer reset, ``TimeoutError`` for a timeout)
that the exchange maps to fastnet's typed errors, so the mapping exists once.

Plain Python in both builds: per request it costs a few attribute writes next to the loop's own work.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import TYPE_CHECKING

from fastnet._internal._sync.real_connection import RECV_BUFFER_SIZE, RealConnection
from fastnet._internal.connection.tls import SessionOffer, keep_resumable_session
from fastnet._internal.http1.parser import ResponseParser
from fastnet._internal.util.clock import monotonic

if TYPE_CHECKING:
    from fastnet._internal.connection.tls import TlsSessions
    from fastnet.route import Address, Route

__all__ = ["READ_HIGH_WATER", "AsyncRealConnection", "new_async_connection"]

#: Bytes the parser may hold that no exchange asked for before the transport stops reading.
READ_HIGH_WATER = 1 << 20
#: How early a deadline timer may fire and still count (uvloop's timers have millisecond resolution).
_TIMER_SLACK = 0.001
#: asyncio's own TLS handshake timeout, set out of the way: ``start_tls`` bounds the handshake itself.
_NO_HANDSHAKE_LIMIT = 365 * 86400.0


class _Protocol(asyncio.BufferedProtocol):
    """The transport's view of an ``AsyncRealConnection``: every callback forwards to it."""

    __slots__ = ("conn",)

    def __init__(self, conn: AsyncRealConnection) -> None:
        self.conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn.transport = transport  # type: ignore[assignment]  # a stream's: an asyncio.Transport

    def get_buffer(self, sizehint: int) -> memoryview:
        view: memoryview = self.conn.view
        return view

    def buffer_updated(self, nbytes: int) -> None:
        self.conn.received(nbytes)

    def eof_received(self) -> bool:
        self.conn.ended(None)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.ended(exc)

    def pause_writing(self) -> None:
        self.conn.writing_paused = True

    def resume_writing(self) -> None:
        self.conn.writing_paused = False
        self.conn.wake(None)


class AsyncRealConnection(RealConnection):
    """A RealConnection whose socket an asyncio transport drives (see the module doc)."""

    __slots__ = (
        "loop",
        "transport",
        "protocol",
        "view",
        "waiter",
        "waiting_for",
        "deadline",
        "timer",
        "timer_at",
        "arrived",
        "eof",
        "error",
        "writing_paused",
        "reading_paused",
        "raw",
        "tls_layers",
        "tls_offer",
    )
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport  # the asyncio transport (a TLS one once start_tls ran); None until attached
    protocol: _Protocol
    view: memoryview  # the receive buffer, as the protocol hands it to the transport
    waiter: asyncio.Future[None] | None  # the fill(), drain() or recv() waiting for the transport
    waiting_for: str  # what the waiter waits for ("read", "write"), for the timeout's message
    deadline: float  # loop time at which the current wait times out; 0: it has no timeout
    timer: asyncio.TimerHandle | None  # the deadline timer (see _wait), or None
    timer_at: float  # loop time at which that timer fires
    arrived: int  # bytes fed to the parser since the last fill()
    eof: bool  # the peer closed (or the transport was lost)
    error: BaseException | None  # why the transport was lost, if it failed
    writing_paused: bool  # the transport's write buffer is full: drain() waits
    reading_paused: bool  # the parser holds READ_HIGH_WATER unasked-for bytes: the transport stops reading
    raw: bytearray | None  # raw mode (handshakes): bytes go here, not to the parser
    # TLS layers whose sessions give_tls_session keeps: ((host, port), ssl_object), as start_tls made them
    tls_layers: list[tuple[tuple[str, int], ssl.SSLObject]]
    tls_offer: SessionOffer  # what its next TLS handshake offers (see tls.SessionOffer)

    # -- the transport's side -------------------------------------------------------------------

    def received(self, nbytes: int) -> None:
        raw = self.raw
        if raw is not None:
            raw += self.view[:nbytes]
        else:
            self.parser.feed_from(self.buf, nbytes)
            self.arrived += nbytes
            if self.arrived >= READ_HIGH_WATER and not self.reading_paused and self.waiter is None:
                self.reading_paused = True
                self.transport.pause_reading()
        self.wake(None)

    def ended(self, exc: BaseException | None) -> None:
        self._cancel_timer()
        self.eof = True
        if exc is not None and self.error is None:
            self.error = exc
        self.no_new_exchanges = True
        self.wake(None)

    def wake(self, result: None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    async def _wait(self, timeout: float, what: str) -> None:
        """Until the transport has news for us (bytes, end, resumed writing), at most ``timeout`` s.

        A loop timer per wait would cost more than the rest of the wait (about 2 µs to schedule and
        cancel, on either loop), so the connection keeps one lazy timer instead: a wait only writes its
        deadline, and arms the timer when none is due by then. When the timer fires it fails a wait whose
        deadline passed, re-arms for a later deadline, and otherwise (nobody waits) lapses. On a busy
        keep-alive connection it fires once per timeout period, not once per request."""
        loop = self.loop
        waiter = loop.create_future()
        self.waiter = waiter
        self.waiting_for = what
        if timeout > 0:
            deadline = loop.time() + timeout
            self.deadline = deadline
            timer = self.timer
            if timer is None or self.timer_at > deadline:
                if timer is not None:
                    timer.cancel()
                self.timer_at = deadline
                self.timer = loop.call_at(deadline, self._deadline_reached)
        else:
            self.deadline = 0.0
        try:
            await waiter
        finally:
            self.waiter = None

    def _deadline_reached(self) -> None:
        self.timer = None
        waiter = self.waiter
        deadline = self.deadline
        if waiter is None or waiter.done() or deadline == 0.0:
            return  # nobody waits (or without a timeout): the next wait arms a new timer
        if self.loop.time() + _TIMER_SLACK >= deadline:
            waiter.set_exception(TimeoutError(f"{self.waiting_for} timed out"))
        else:
            self.timer_at = deadline
            self.timer = self.loop.call_at(deadline, self._deadline_reached)

    def _cancel_timer(self) -> None:
        timer = self.timer
        if timer is not None:
            self.timer = None
            timer.cancel()

    # -- I/O: what an exchange calls (the blocking connection's methods, as coroutines) ------------

    def write(self, data: bytes) -> None:
        """Hand ``data`` to the transport (it sends at once what the socket takes, buffers the rest)."""
        if self.eof:
            raise self._lost_error()
        self.transport.write(data)

    async def drain(self) -> None:  # type: ignore[override]  # the same step, as a coroutine
        """Wait while the transport's write buffer is over its high-water mark (the write timeout)."""
        while self.writing_paused:
            if self.eof:
                raise self._lost_error()
            await self._wait(self.write_timeout, "write")

    async def fill(self) -> int:  # type: ignore[override]
        """The bytes fed to the parser since the last call, waiting (the read timeout) for some when
        there are none yet; 0 means the peer closed."""
        while True:
            n = self.arrived
            if n:
                self.arrived = 0
                if self.reading_paused:
                    self.reading_paused = False
                    self.transport.resume_reading()
                return n
            if self.eof:
                if self.error is not None:
                    raise self._lost_error()
                return 0
            await self._wait(self.read_timeout, "read")

    async def receive_body(self, head: bytes, total: int) -> tuple[bytes, int]:  # type: ignore[override]
        """The rest of a ``total``-byte body, ``head`` of which the parser already returned:
        ``(body, received)``; ``received < total`` means the peer closed. Afterwards the parser stands
        after what was received."""
        parts = [head]
        have = len(head)
        parser = self.parser
        while have < total:
            data = parser.read_body()
            if data:
                parts.append(data)
                have += len(data)
                continue
            if data is None:
                break
            if await self.fill() == 0:
                break
        return b"".join(parts), have

    def set_timeouts(self, read_timeout: float, write_timeout: float) -> None:
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout

    def is_healthy(self) -> bool:
        """False when the peer closed, or sent bytes, while the connection was idle. (Stray bytes are in
        the parser: ``arrived`` also counts bytes of the last response that were parsed without a
        ``fill()``, which says nothing about the connection.)"""
        return not (self.closed or self.eof or self.parser.take_buffered())

    def close(self) -> None:
        """Close now (no graceful flush: a connection closed here is not coming back). Safe from any
        thread, and after the loop itself was closed (the socket is then closed directly)."""
        if self.closed:
            return
        self.closed = True
        self.no_new_exchanges = True
        transport = self.transport
        loop = self.loop
        if loop.is_closed():
            if self.sock is not None:
                self.sock.close()
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            if transport is not None:
                transport.abort()
            self.ended(None)
        else:
            loop.call_soon_threadsafe(self._close_on_loop)

    def _close_on_loop(self) -> None:
        transport = self.transport
        if transport is not None:
            transport.abort()
        self.ended(None)

    def shutdown(self) -> None:
        """Cancel: end the transport now; a coroutine waiting on it wakes with an error."""
        if self.error is None:
            self.error = ConnectionAbortedError("the connection was closed under the call")
        self.close()

    # -- before HTTP: handshakes and TLS --------------------------------------------------------

    def raw_mode(self, on: bool) -> None:
        """Send what arrives to ``recv()`` (SOCKS, CONNECT) instead of the HTTP parser. Bytes received in
        raw mode that no handshake took are the origin's: turning raw mode off hands them to the parser."""
        raw = self.raw
        self.raw = bytearray() if on else None
        if not on and raw:
            self.parser.feed(bytes(raw))
            self.arrived += len(raw)

    async def recv(self, timeout: float) -> bytes:
        """In raw mode: the bytes received so far, waiting at most ``timeout`` s for some; b"" at EOF."""
        raw = self.raw
        assert raw is not None, "recv() is for raw mode"
        while not raw:
            if self.eof:
                if self.error is not None:
                    raise self._lost_error()
                return b""
            await self._wait(timeout, "read")
        data = bytes(raw)
        raw.clear()
        return data

    def unread(self, data: bytes) -> None:
        """In raw mode: give back bytes ``recv()`` returned that a handshake did not consume."""
        raw = self.raw
        assert raw is not None, "unread() is for raw mode"
        raw[:0] = data

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str, timeout: float) -> None:
        """TLS over the current transport (a plain one, or TLS to a proxy: TLS inside TLS), the handshake
        bounded by ``timeout`` s (0: none): ``TimeoutError`` when it takes longer, as a blocking socket's
        timeout would (asyncio's own handshake timeout raises ``ConnectionAbortedError``)."""
        if self.raw:
            raise ConnectionError(f"{len(self.raw)} bytes arrived before the TLS handshake started")
        if self.eof:
            raise self._lost_error()
        transport = self.transport
        loop = self.loop
        timer = loop.call_later(timeout, self._handshake_expired, transport) if timeout > 0 else None
        try:
            tls = await loop.start_tls(
                transport,
                self.protocol,
                context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=_NO_HANDSHAKE_LIMIT,
            )
        except TypeError as exc:
            if not self.is_tls:
                raise
            # asyncio's loop before Python 3.11 cannot start TLS over a TLS transport (uvloop can)
            raise ConnectionError(f"this event loop cannot run TLS inside TLS ({exc})") from exc
        except BaseException as exc:
            if self.error is not None and exc is not self.error and isinstance(exc, OSError):
                raise self._lost_error() from exc  # the timer or shutdown() ended it: say why
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if tls is None or tls.is_closing() or self.error is not None:
            # aborted during the handshake (shutdown(), the timer): the loop may still hand back a transport
            if tls is not None:
                tls.abort()
            raise self._lost_error()
        self.transport = tls
        self.is_tls = True
        ssl_object = tls.get_extra_info("ssl_object")
        self.tls_version = ssl_object.version() if ssl_object is not None else None

    def offer_tls_session(self, sessions: TlsSessions, key: tuple[str, int]) -> None:
        """After ``start_tls``: have the pool's release keep this layer's session in ``sessions`` under
        ``key`` (unless the layer resumed one), as ``RealConnection.offer_tls_sessions`` does."""
        ssl_object = self.transport.get_extra_info("ssl_object")
        if ssl_object is not None and not ssl_object.session_reused:
            self.tls_layers.append((key, ssl_object))
            self.tls_sessions = sessions
            self.gives_tls_session = True

    def give_tls_session(self) -> None:
        """``RealConnection.give_tls_session`` for the layers ``offer_tls_session`` listed."""
        if self.exchange_count == 0:
            return  # no response yet: no ticket to read (the connection is about to close anyway)
        self.gives_tls_session = False
        sessions = self.tls_sessions
        layers = self.tls_layers
        self.tls_sessions = None
        self.tls_layers = []
        if sessions is None:
            return
        for key, ssl_object in layers:
            try:
                keep_resumable_session(sessions, key, ssl_object)
            except (AttributeError, OSError, ValueError):
                break  # closed

    def _handshake_expired(self, transport: asyncio.Transport) -> None:
        if self.error is None:
            self.error = TimeoutError("the TLS handshake timed out")
        transport.abort()

    def _lost_error(self) -> OSError:
        error = self.error
        if isinstance(error, OSError):
            return error
        lost = ConnectionResetError("the connection was closed")
        if error is not None:
            lost.__cause__ = error
        return lost


def new_async_connection(
    loop: asyncio.AbstractEventLoop,
    route: Route | None,
    address: Address,
    http_proxy: bool,
    sock: socket.socket | None = None,
) -> AsyncRealConnection:
    """An asyncio connection not yet attached to a transport: pass ``conn.protocol`` to the loop's
    ``create_connection(lambda: conn.protocol, sock=sock)``. ``sock`` is kept to close it should the
    loop be closed first."""
    conn = AsyncRealConnection.__new__(AsyncRealConnection)
    conn.sock = sock
    conn.sendall = None  # type: ignore[assignment]  # unused on asyncio: the protocol does the I/O
    conn.recv_into = None  # type: ignore[assignment]
    conn.route = route
    conn.address = address
    conn.parser = ResponseParser()
    conn.buf = bytearray(RECV_BUFFER_SIZE)
    now = monotonic()
    conn.idle_at = now
    conn.created_at = now
    conn.no_new_exchanges = False
    conn.exchange_count = 0
    conn.read_timeout = 0.0
    conn.write_timeout = 0.0
    conn.is_tls = False
    conn.pool = None
    conn.closed = False
    conn.http_proxy = http_proxy
    conn.tls_version = None
    conn.proxy_authorization = None
    conn.dns_time = 0.0
    conn.connect_time = 0.0
    conn.tls_time = 0.0
    conn.remote_address = None
    conn.gives_tls_session = False
    conn.tls_sessions = None
    conn.tls_session_keys = ()
    conn.tls_io = None
    conn.loop = loop
    conn.transport = None  # type: ignore[assignment]  # until connection_made
    conn.protocol = _Protocol(conn)
    conn.view = memoryview(conn.buf)
    conn.waiter = None
    conn.waiting_for = ""
    conn.deadline = 0.0
    conn.timer = None
    conn.timer_at = 0.0
    conn.arrived = 0
    conn.eof = False
    conn.error = None
    conn.writing_paused = False
    conn.reading_paused = False
    conn.raw = None
    conn.tls_layers = []
    conn.tls_offer = SessionOffer()
    return conn
