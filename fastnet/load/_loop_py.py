"""The load generator's event loop: many non-blocking HTTP/1.1 connections driven from one thread.

Pure-Python twin of the compiled ``_loop_c`` (C sockets and ``epoll``, the compiled response parser
called through its C method table); import both through ``fastnet.load.loop``. This file is the
reference: the compiled twin makes the same decisions in the same order, and ``tests/load`` runs the
same tests against both.

Theory of operation
-------------------
A *slot* is one request the run will make. Slot ``k`` has an *intended start*: with ``rate`` (open loop)
``start + k / rate`` on a fixed timetable; without it (closed loop) the moment a connection was free to
carry it. Its latency is *completion - intended start*, so when the server stalls, the requests that
could not be sent on time carry the stall in their latency (no coordinated omission): the timetable
keeps going while every connection is busy, and the backlog is sent as soon as connections free up.

Each connection is in one of five states: ``CLOSED`` (no socket), ``CONNECTING`` (a non-blocking TCP
connect in flight), ``SETUP`` (a connection being prepared elsewhere: TLS, a CONNECT or SOCKS tunnel,
made by ``prepare(conn, group)`` with fastnet's connection code in a helper thread and handed back with
:meth:`Engine.deliver`), ``READY`` (connected and idle) and ``BUSY`` (a request in flight). A due slot
goes to a ``READY`` connection if there is one (most recently freed first), else to a ``CLOSED`` one,
which connects first: the request that needed the connection fails if connecting fails, so a run with
``total`` requests against a dead server still ends. When opening fails at once (``socket()`` out of file
descriptors, ``connect()`` out of ports or routes), the turn ends there and no connection is opened for
:data:`OPEN_BACKOFF_NS`: the loop looks at its clock and its deadlines again, and a generator that cannot
open any socket waits instead of spinning (its connections still in use carry on meanwhile). A connection
``prepare`` fails to make for want of descriptors or memory (``EMFILE``, ``ENFILE``, ``ENOBUFS``,
``ENOMEM`` among its error's causes) fails later, in a helper thread: then one connection is opened per
:data:`OPEN_BACKOFF_NS` until one is made again.

Every request is prebuilt bytes (``group.requests``, round-robin within the connection's group). A
response is parsed by fastnet's ``ResponseParser``. While a head is awaited a read takes at most
:data:`HEAD_READ` bytes; the rest of a ``Content-Length`` body is then received with ``MSG_TRUNC``, which
makes the kernel count and drop the bytes instead of copying them (plain TCP only; TLS must decrypt),
and told to the parser with ``skip_body_bytes``. A response completes the slot;
a connection that either side wants closed goes back to ``CLOSED``. Errors (connect failures, resets,
early EOF, malformed responses, timeouts) fail the slot, close the connection and are grouped by a
key (the error type, with the errno name where there is one) with the first message as an example.

The loop is bounded: :meth:`Engine.run` returns by ``until`` (a ``time.monotonic_ns()`` value), and the
run ends after ``total`` outcomes, at ``duration`` (requests still in flight are abandoned and
counted), or after :meth:`Engine.stop`. Every request has a deadline (``timeout``), checked every
:data:`CHECK_NS`.
"""

from __future__ import annotations

import collections
import errno as errno_module
import math
import os
import selectors
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fastnet._internal.http1.parser import BODY_LENGTH, BODY_NONE, ResponseParser
from fastnet.exceptions import ConnectionClosedError, ProtocolError

if TYPE_CHECKING:
    from fastnet.load._hist import Histogram, Histograms
    from fastnet.load._targets import Group

__all__ = [
    "BUSY",
    "CHECK_NS",
    "CLOSED",
    "CONNECTING",
    "HEAD_READ",
    "IMPLEMENTATION",
    "MAX_WAIT_NS",
    "OPEN_BACKOFF_NS",
    "READY",
    "RECV_SIZE",
    "SETUP",
    "Engine",
    "Recorder",
]

IMPLEMENTATION = "py"

CLOSED = 0
CONNECTING = 1
SETUP = 2
READY = 3
BUSY = 4

#: How often deadlines are checked (ns).
CHECK_NS = 10_000_000
#: Size of the receive buffer all connections share.
RECV_SIZE = 131072
#: The most a read takes while a response head is awaited: a big body's rest is then skipped uncopied.
HEAD_READ = 4096
#: The longest the loop waits for events before it looks at the clock again (ns).
MAX_WAIT_NS = 1_000_000_000
#: How long no connection is opened after opening one failed at once (ns).
OPEN_BACKOFF_NS = 10_000_000

_NO_DATA = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
_monotonic_ns = time.monotonic_ns


class Recorder:
    """Records values into an ``hdrh`` histogram (clamped to its highest trackable value)."""

    __slots__ = ("histogram", "highest")

    def __init__(self, histogram: Histogram) -> None:
        self.histogram = histogram
        self.highest = int(histogram.highest_trackable_value)

    def record(self, value: int) -> None:
        if value < 0:
            value = 0
        elif value > self.highest:
            value = self.highest
        self.histogram.record_value(value)

    def sync(self) -> None:
        """Make the histogram object current (the compiled twin counts in C between syncs)."""


def _errno_name(code: int) -> str:
    return errno_module.errorcode.get(code, f"errno {code}")


_RESOURCE_ERRNOS = (errno_module.EMFILE, errno_module.ENFILE, errno_module.ENOBUFS, errno_module.ENOMEM)


def _resource_errno(error: BaseException | None) -> int:
    """The errno of running out of descriptors or memory among ``error`` and its causes, else 0."""
    for _ in range(8):
        if error is None:
            break
        code = getattr(error, "errno", None)
        if code in _RESOURCE_ERRNOS:
            return int(code)
        error = error.__cause__ or error.__context__
    return 0


class _Conn:
    __slots__ = (
        "index",
        "group",
        "state",
        "sock",
        "tls",
        "parser",
        "intended",
        "started",
        "sent_at",
        "first_byte",
        "deadline",
        "free_since",
        "out",
        "out_off",
        "in_head",
        "skipping",
        "remaining",
        "status",
        "keep_alive",
        "writing",
    )

    def __init__(self, index: int, group: int) -> None:
        self.index = index
        self.group = group
        self.state = CLOSED
        self.sock: Any = None
        self.tls = False
        self.parser: Any = None
        self.intended = 0
        self.started = 0
        self.sent_at = 0
        self.first_byte = 0
        self.deadline = 0
        self.free_since = 0
        self.out = b""
        self.out_off = 0
        self.in_head = True
        self.skipping = False
        self.remaining = 0
        self.status = 0
        self.keep_alive = False
        self.writing = False


class Engine:
    """Drives ``len(connections)`` connections; see the module documentation.

    ``groups[g]`` has ``requests`` (a non-empty list of request bytes), ``address`` (``(family, ip,
    port)`` to connect to directly, or ``None`` when connections are made by ``prepare``) and ``label``
    (used in error messages). ``connections[i]`` is the group of connection ``i``. ``total`` is the
    number of requests (``-1``: no limit), ``duration`` and ``timeout`` are seconds (``duration`` 0: no
    limit), ``rate`` is requests per second (0: closed loop). ``recorders`` has ``latency``,
    ``first_byte``, ``response`` (from the actual send to the last byte), ``connect``, ``dns``, ``tls``
    and ``lag`` (microseconds). ``keepalive=False``
    closes every connection after its response (the requests say ``Connection: close``).
    """

    def __init__(
        self,
        groups: Sequence[Group],
        connections: Sequence[int],
        *,
        total: int,
        duration: float,
        rate: float,
        timeout: float,
        head: bool,
        recorders: Histograms,
        prepare: Callable[[int, int], None] | None = None,
        keepalive: bool = True,
    ) -> None:
        if not connections:
            raise ValueError("at least one connection is needed")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if rate < 0:
            raise ValueError("rate must not be negative")
        self._requests: list[list[bytes]] = []
        self._addresses: list[tuple[int, str, int] | None] = []
        self._labels: list[str] = []
        for group in groups:
            requests = list(group.requests)
            if not requests:
                raise ValueError("a group needs at least one request")
            self._requests.append(requests)
            self._addresses.append(group.address)
            self._labels.append(str(group.label))
        for g in connections:
            if not 0 <= g < len(self._requests):
                raise ValueError(f"connection group {g} does not exist")
            if self._addresses[g] is None and prepare is None:
                raise ValueError("a group without an address needs prepare()")
        self._rr = [0] * len(self._requests)
        self._conns = [_Conn(i, g) for i, g in enumerate(connections)]
        self._total = total
        self._duration_ns = int(duration * 1e9)
        self._rate = rate
        self._interval = 1e9 / rate if rate > 0 else 0.0
        self._timeout_ns = int(timeout * 1e9)
        self._timeout_s = timeout
        self._head = head
        self._keepalive = keepalive
        self._latency = Recorder(recorders.latency)
        self._first_byte = Recorder(recorders.first_byte)
        self._response = Recorder(recorders.response)
        self._connect = Recorder(recorders.connect)
        self._dns = Recorder(recorders.dns)
        self._tls = Recorder(recorders.tls)
        self._lag = Recorder(recorders.lag)
        self._prepare = prepare
        self._buf = bytearray(RECV_SIZE)
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._delivered: collections.deque[
            tuple[int, socket.socket | None, BaseException | None, tuple[int, int, int] | None]
        ] = collections.deque()
        self._ready: list[int] = []
        self._closed: list[int] = list(range(len(self._conns) - 1, -1, -1))
        self._statuses: dict[int, int] = {}
        self._errors: dict[str, list[Any]] = {}
        self._start = 0
        self._end = 0
        self._slot = 0
        self._next_check = 0
        self._open_after = 0
        self._probing = False
        self._stop_requested = False
        self._finished = False
        self._shut = False
        #: Why the run ended: "" while running, then "requests", "duration" or "stopped".
        self.reason = ""
        self.dispatched = 0
        self.completed = 0
        self.failed = 0
        self.bytes_received = 0
        self.connections_opened = 0
        #: Requests in flight when the run ended at its duration (not counted as completed or failed).
        self.abandoned = 0
        #: Slots whose time had come when the run ended but that no connection was free to send.
        self.backlog = 0
        self.started_ns = 0
        self.ended_ns = 0

    # -- public ---------------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self.dispatched - self.completed - self.failed

    @property
    def finished(self) -> bool:
        return self._finished

    def statuses(self) -> dict[int, int]:
        """Completed responses by status code."""
        return dict(sorted(self._statuses.items()))

    def errors(self) -> dict[str, tuple[int, str]]:
        """Failed requests by error key: ``{key: (count, first message)}``."""
        return {key: (value[0], value[1]) for key, value in self._errors.items()}

    def stop(self) -> None:
        """End the run at the next turn of the loop (safe from a signal handler)."""
        self._stop_requested = True

    def deliver(
        self,
        index: int,
        sock: socket.socket | None,
        error: BaseException | None,
        phases: tuple[int, int, int] | None,
    ) -> None:
        """Hand back a connection ``prepare(index, group)`` was asked for (any thread).

        ``sock`` is the connected socket (plain or TLS) or ``None`` with ``error``; ``phases`` is
        ``(dns_us, connect_us, tls_us)`` with -1 for a phase that did not happen.
        """
        if self._shut:
            if sock is not None:
                sock.close()
            return
        self._delivered.append((index, sock, error, phases))
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def run(self, until_ns: int) -> bool:
        """Run until ``until_ns`` (``time.monotonic_ns()``) or the end of the run; True once it ended."""
        if self._finished:
            return True
        now = _monotonic_ns()
        if self._start == 0:
            self._start = now
            self.started_ns = now
            self._end = now + self._duration_ns if self._duration_ns > 0 else 0
            self._next_check = now + CHECK_NS
        while True:
            if self._stop_requested:
                self._finish(now, "stopped")
                break
            if self._total >= 0 and self.completed + self.failed >= self._total:
                self._finish(now, "requests")
                break
            if self._end and now >= self._end:
                self._finish(now, "duration")
                break
            if now >= until_ns:
                break
            wait = self._dispatch(now)
            timeout = until_ns - now
            if self._end and self._end - now < timeout:
                timeout = self._end - now
            if wait >= 0 and wait < timeout:
                timeout = wait
            if self.in_flight > 0 and self._next_check - now < timeout:
                timeout = self._next_check - now
            if timeout < 0:
                timeout = 0
            if timeout > MAX_WAIT_NS:
                timeout = MAX_WAIT_NS
            events = self._sel.select(math.ceil(timeout / 1e6) / 1e3)
            now = _monotonic_ns()
            for key, mask in events:
                index = key.data
                if index is None:
                    self._drain_wake(now)
                    continue
                conn = self._conns[index]
                if conn.sock is None:
                    continue  # closed earlier in this batch
                if conn.state == CONNECTING:
                    self._on_connect(conn, now)
                elif mask & selectors.EVENT_WRITE and conn.writing:
                    self._write_more(conn, now)
                else:
                    self._on_readable(conn, now)
            if now >= self._next_check:
                self._check_deadlines(now)
                self._next_check = now + CHECK_NS
        self._latency.sync()
        self._first_byte.sync()
        self._response.sync()
        self._connect.sync()
        self._dns.sync()
        self._tls.sync()
        self._lag.sync()
        return self._finished

    def close(self) -> None:
        """Close every socket and the selector; connections delivered later are closed on arrival."""
        if self._shut:
            return
        self._shut = True
        for conn in self._conns:
            self._drop(conn)
        while self._delivered:
            _index, sock, _error, _phases = self._delivered.popleft()
            if sock is not None:
                sock.close()
        self._sel.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- dispatch -------------------------------------------------------------------------------------

    def _dispatch(self, now: int) -> int:
        """Start every slot that is due and has a connection; ns until the next one is due, -1 if none
        is waiting on time."""
        while True:
            if self._total >= 0 and self.dispatched >= self._total:
                return -1
            if self._end and now >= self._end:
                return -1
            if self._interval > 0:
                intended = self._start + int(self._slot * self._interval)
                if self._end and intended >= self._end:
                    return -1
                if intended > now:
                    return intended - now
            else:
                intended = now
            if self._ready:
                conn = self._conns[self._ready.pop()]
            elif self._closed and now >= self._open_after:
                conn = self._conns[self._closed.pop()]
            elif self._closed:
                return self._open_after - now
            else:
                return -1
            if self._interval > 0:
                free = conn.free_since if conn.free_since > intended else intended
                self._lag.record((now - free) // 1000)
            self._slot += 1
            self.dispatched += 1
            conn.intended = intended
            conn.started = now
            conn.deadline = now + self._timeout_ns
            if conn.state == READY:
                self._send(conn, now)
            else:
                self._open(conn, now)
                if conn.state == CLOSED or (self._probing and conn.state == SETUP):
                    # failed at once, or out of descriptors in prepare(): look at the clock, back off
                    self._open_after = _monotonic_ns() + OPEN_BACKOFF_NS
                    return OPEN_BACKOFF_NS

    def _open(self, conn: _Conn, now: int) -> None:
        address = self._addresses[conn.group]
        conn.parser = ResponseParser()
        if address is None:
            conn.state = SETUP
            assert self._prepare is not None
            self._prepare(conn.index, conn.group)
            return
        family, host, port = address
        conn.started = _monotonic_ns()  # this connect's own start (a turn may open many)
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:  # out of file descriptors, for one
            self._connect_failed(conn, exc.errno or 0, now, "open a socket for")
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex((host, port))
        conn.sock = sock
        conn.tls = False
        if code == 0:
            self._sel.register(sock, selectors.EVENT_READ, conn.index)
            self._connected(conn, now)
        elif code == errno_module.EINPROGRESS:
            conn.state = CONNECTING
            self._sel.register(sock, selectors.EVENT_WRITE, conn.index)
        else:
            self._connect_failed(conn, code, now)

    def _on_connect(self, conn: _Conn, now: int) -> None:
        code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code != 0:
            self._connect_failed(conn, code, now)
            return
        self._sel.modify(conn.sock, selectors.EVENT_READ, conn.index)
        self._connected(conn, now)

    def _connected(self, conn: _Conn, now: int) -> None:
        self.connections_opened += 1
        self._connect.record((_monotonic_ns() - conn.started) // 1000)
        self._send(conn, now)

    def _connect_failed(self, conn: _Conn, code: int, now: int, doing: str = "connect to") -> None:
        host, port = self._addresses[conn.group][1:]  # type: ignore[index]  # opened by the loop: an address
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._fail(
            conn,
            f"ConnectError ({_errno_name(code)})",
            f"{doing} {where} failed: [Errno {code}] {os.strerror(code)}",
            now,
        )

    def _drain_wake(self, now: int) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except OSError:
            pass
        while self._delivered:
            index, sock, error, phases = self._delivered.popleft()
            conn = self._conns[index]
            if conn.state != SETUP:  # pragma: no cover - a delivery for a connection not waiting
                if sock is not None:
                    sock.close()
                continue
            if phases is not None:
                dns, connect, tls = phases
                if dns >= 0:
                    self._dns.record(dns)
                if connect >= 0:
                    self._connect.record(connect)
                if tls >= 0:
                    self._tls.record(tls)
            if sock is None:
                text = str(error) if error is not None else "connection setup failed"
                key = type(error).__name__ if error is not None else "ConnectError"
                code = _resource_errno(error)
                if code:
                    key = f"{key} ({_errno_name(code)})"
                    self._probing = True
                self._fail(conn, key, text, now)
                continue
            self._probing = False
            self.connections_opened += 1
            sock.setblocking(False)
            conn.sock = sock
            conn.tls = isinstance(sock, ssl.SSLSocket)
            self._sel.register(sock, selectors.EVENT_READ, index)
            self._send(conn, now)

    # -- one request ----------------------------------------------------------------------------------

    def _send(self, conn: _Conn, now: int) -> None:
        now = _monotonic_ns()  # the moment of this send, not of the turn of the loop
        requests = self._requests[conn.group]
        data = requests[self._rr[conn.group] % len(requests)]
        self._rr[conn.group] += 1
        conn.state = BUSY
        conn.sent_at = now
        conn.first_byte = 0
        conn.deadline = now + self._timeout_ns
        conn.in_head = True
        conn.skipping = False
        try:
            sent = conn.sock.send(data)
        except _NO_DATA:
            sent = 0
        except OSError as exc:
            self._io_failed(conn, exc, "sending the request", now)
            return
        if sent < len(data):
            conn.out = data
            conn.out_off = sent
            conn.writing = True
            self._sel.modify(conn.sock, selectors.EVENT_WRITE, conn.index)

    def _write_more(self, conn: _Conn, now: int) -> None:
        try:
            sent = conn.sock.send(memoryview(conn.out)[conn.out_off :])
        except _NO_DATA:
            return
        except OSError as exc:
            self._io_failed(conn, exc, "sending the request", now)
            return
        conn.out_off += sent
        if conn.out_off >= len(conn.out):
            conn.out = b""
            conn.out_off = 0
            conn.writing = False
            self._sel.modify(conn.sock, selectors.EVENT_READ, conn.index)

    def _on_readable(self, conn: _Conn, now: int) -> None:
        buf = self._buf
        while True:
            try:
                if conn.tls:
                    n = conn.sock.recv_into(buf)
                elif conn.skipping:
                    # the rest of a Content-Length body: counted by the kernel, never copied to us
                    n = conn.sock.recv_into(buf, min(conn.remaining, RECV_SIZE), socket.MSG_TRUNC)
                elif conn.in_head and conn.state == BUSY:
                    n = conn.sock.recv_into(buf, HEAD_READ)
                else:
                    n = conn.sock.recv_into(buf)
            except _NO_DATA:
                return
            except OSError as exc:
                if conn.state == READY:
                    self._close(conn)
                else:
                    self._io_failed(conn, exc, "reading the response", now)
                return
            if conn.state != BUSY:
                # bytes or EOF on an idle connection: the server is done with it
                self._close(conn)
                return
            self.bytes_received += n
            if conn.first_byte == 0 and n > 0:
                conn.first_byte = now
                self._first_byte.record((now - conn.sent_at) // 1000)
            try:
                done = self._consume(conn, n)
            except (ProtocolError, ConnectionClosedError) as exc:
                self._fail(conn, type(exc).__name__, f"{exc} ({self._labels[conn.group]})", now)
                return
            if done:
                self._complete(conn, now)
                return
            if n == 0:  # pragma: no cover - the parser raises on an early EOF
                self._fail(conn, "ConnectionClosedError", "connection closed", now)
                return
            if conn.tls:
                if conn.sock.pending() == 0:
                    return
            elif not conn.skipping:
                return

    def _consume(self, conn: _Conn, n: int) -> bool:
        """Feed ``n`` received bytes (0: EOF) to the connection's parser; True once the response is in."""
        parser = conn.parser
        buf = self._buf
        if conn.skipping:
            if n == 0:
                parser.feed_from(buf, 0)
                parser.read_body()  # raises: body bytes missing
                return False
            if n <= conn.remaining:
                parser.skip_body_bytes(n)
                conn.remaining -= n
                if conn.remaining:
                    return False
                parser.read_body()
                return True
            k = conn.remaining
            parser.skip_body_bytes(k)
            conn.remaining = 0
            parser.read_body()
            parser.feed(memoryview(buf)[k:n])  # bytes after the body stay for the next head
            return True
        parser.feed_from(buf, n)
        if conn.in_head:
            while True:
                head = parser.read_head(self._head)
                if head is None:
                    return False
                status = head[0]
                if status >= 200 or status == 101:
                    break
            conn.in_head = False
            conn.status = status
            conn.keep_alive = head[6]
            mode = head[4]
            if mode == BODY_NONE:
                return True
            if mode == BODY_LENGTH:
                body = parser.read_body()
                if body is None:
                    return True
                conn.remaining = head[5] - len(body)
                if conn.remaining == 0:
                    parser.read_body()
                    return True
                conn.skipping = True
                return False
        while True:
            piece = parser.read_body()
            if piece is None:
                return True
            if not piece:
                return False

    def _complete(self, conn: _Conn, now: int) -> None:
        now = _monotonic_ns()  # after the last read and the parse, as a client would see it
        self._latency.record((now - conn.intended) // 1000)
        self._response.record((now - conn.sent_at) // 1000)
        self.completed += 1
        self._statuses[conn.status] = self._statuses.get(conn.status, 0) + 1
        if conn.keep_alive and self._keepalive and conn.status != 101:
            conn.state = READY
            conn.free_since = now
            self._ready.append(conn.index)
        else:
            self._close(conn)
            conn.free_since = now

    # -- failures -------------------------------------------------------------------------------------

    def _io_failed(self, conn: _Conn, exc: OSError, doing: str, now: int) -> None:
        code = exc.errno or 0
        key = f"ConnectionClosedError ({_errno_name(code)})" if code else "ConnectionClosedError"
        text = os.strerror(code) if code else str(exc)
        self._fail(conn, key, f"connection lost {doing}: {text} ({self._labels[conn.group]})", now)

    def _fail(self, conn: _Conn, key: str, example: str, now: int) -> None:
        self.failed += 1
        entry = self._errors.get(key)
        if entry is None:
            self._errors[key] = [1, example]
        else:
            entry[0] += 1
        self._close(conn)
        conn.free_since = now

    def _check_deadlines(self, now: int) -> None:
        for conn in self._conns:
            if conn.deadline <= now and (conn.state == BUSY or conn.state == CONNECTING):
                if conn.state == CONNECTING:
                    host, port = self._addresses[conn.group][1:]  # type: ignore[index]  # opened by the loop: an address
                    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                    self._fail(
                        conn,
                        "ConnectTimeout",
                        f"connect to {where} timed out after {self._timeout_s:g} s",
                        now,
                    )
                else:
                    self._fail(
                        conn,
                        "ReadTimeout",
                        f"no complete response within {self._timeout_s:g} s ({self._labels[conn.group]})",
                        now,
                    )

    # -- connections ----------------------------------------------------------------------------------

    def _drop(self, conn: _Conn) -> None:
        """Close the connection's socket, if any, and forget it (the state is left to the caller)."""
        sock = conn.sock
        if sock is not None:
            conn.sock = None
            try:
                self._sel.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()
        conn.parser = None
        conn.out = b""
        conn.writing = False

    def _close(self, conn: _Conn) -> None:
        if conn.state == READY:
            self._ready.remove(conn.index)
        self._drop(conn)
        conn.state = CLOSED
        self._closed.append(conn.index)

    def _finish(self, now: int, reason: str) -> None:
        self._finished = True
        self.reason = reason
        self.ended_ns = now
        self.abandoned = self.in_flight
        if self._interval > 0 and (self._total < 0 or self.dispatched < self._total):
            limit = self._end if self._end and self._end < now else now
            due = math.ceil((limit - self._start) / self._interval) if limit > self._start else 0
            if self._total >= 0 and due > self._total:
                due = self._total
            self.backlog = max(0, due - self._slot)
