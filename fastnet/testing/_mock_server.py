"""A scripted HTTP/1.1 server on loopback, for testing HTTP clients (fastnet's and anyone's).

Theory of operation
-------------------
One accept thread waits on the listening socket and on a wake-up socket pair (so ``shutdown()`` never
has to poll). Each accepted connection gets its own daemon thread that loops: read a request head,
pick a response, read the body, record the request, write the response, apply the response's
:class:`SocketPolicy`. Responses come from a FIFO queue filled by :meth:`MockServer.enqueue`, or from
``dispatcher`` when one is set; when the queue is empty ``default_response`` is used.

The server is deliberately tolerant of clients and strict about nothing but framing: a request head
that cannot be parsed gets a ``400`` and the connection is closed; a client that closes is just ended.
It uses only the standard library (plus ``trustme`` for TLS), never fastnet's own client or h11, so it
can judge them.

Shutdown is fast because no thread ever blocks on anything shutdown cannot interrupt: sockets are
woken with ``shutdown(SHUT_RDWR)`` on their file descriptor (readers see EOF, writers an error), and
every sleep (delays, throttling, stalls) is a wait on one ``threading.Event``. Each thread closes
the sockets it owns; ``shutdown()`` only closes what a thread failed to close in time.

With ``tls=True`` the server sniffs the first byte of each connection: ``0x16`` (a TLS handshake
record) starts TLS, anything else is served in plain text. That is what lets a client send
``CONNECT`` in the clear and then start TLS inside the tunnel (``MockResponse(tunnel=True)``).
A plain server (``tls=False``) that sees a connection open with a TLS ClientHello (``0x16 0x03 0x0X``)
answers as nginx does on a plain port: a plain-text ``400 Bad Request``, then close. The client's
handshake then fails at once instead of waiting for a ServerHello; nothing is recorded as a request.
"""

from __future__ import annotations

import collections
import enum
import http
import os
import queue
import re
import selectors
import socket
import ssl
import struct
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from fastnet.testing import _tls

if TYPE_CHECKING:
    import trustme

__all__ = ["MockResponse", "MockServer", "RecordedRequest", "SocketPolicy"]

HeadersLike = Mapping[str, object] | Iterable[tuple[str, object]] | None

_MAX_HEAD = 64 * 1024
_MAX_LINE = 8 * 1024
_RECV = 64 * 1024
_LINGER_SECONDS = 0.5
_JOIN_SECONDS = 1.0
#: ``MockServer``'s default listen backlog: room for a few hundred connections opened at once.
DEFAULT_BACKLOG = max(socket.SOMAXCONN, 1024)


class SocketPolicy(enum.Enum):
    """What the server does with the connection around a response.

    >>> MockResponse(200, policy=SocketPolicy.CLOSE_AFTER_RESPONSE).policy.name
    'CLOSE_AFTER_RESPONSE'
    """

    #: Serve further requests on the connection (the default).
    KEEP_OPEN = "keep_open"
    #: Send the response, then close the connection.
    CLOSE_AFTER_RESPONSE = "close_after_response"
    #: Close the connection as soon as it is accepted, before reading anything (or TLS). The check is
    #: made against the head of the queue when a connection is accepted, and that response is consumed.
    DISCONNECT_AT_START = "disconnect_at_start"
    #: Read the request, then close without answering.
    DISCONNECT_AFTER_REQUEST = "disconnect_after_request"
    #: Read the request and never answer; the socket stays open until shutdown.
    NO_RESPONSE = "no_response"
    #: Send the head and half of the body, then hang until shutdown.
    STALL_BODY = "stall_body"
    #: Read the request, then reset the connection (RST through ``SO_LINGER`` 0).
    RESET_AFTER_REQUEST = "reset_after_request"
    #: Answer at once without reading the request body (no ``100 Continue``), then close.
    EXPECT_CONTINUE_REJECT = "expect_continue_reject"
    #: Send the response, then ``shutdown(SHUT_WR)``; the connection is closed once the client closes.
    SHUTDOWN_OUTPUT_AT_END = "shutdown_output_at_end"


def _pairs(headers: HeadersLike) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items: Iterable[tuple[str, object]] = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


def _has(headers: Sequence[tuple[str, str]], name: str) -> bool:
    lname = name.lower()
    return any(n.lower() == lname for n, _ in headers)


def _encode_head(start_line: str, headers: Sequence[tuple[str, str]]) -> bytes:
    lines = [start_line]
    lines.extend(f"{name}: {value}" for name, value in headers)
    text = "\r\n".join(lines) + "\r\n\r\n"
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        # A test may want to see how a client copes with non-Latin-1 header bytes.
        return text.encode("utf-8")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


class MockResponse:
    """One scripted response, queued with :meth:`MockServer.enqueue`. Immutable once built.

    >>> r = MockResponse(200, headers={"Content-Type": "text/plain"}, body="hello")
    >>> r.body, r.headers
    (b'hello', [('Content-Type', 'text/plain')])

    ``headers`` may be a dict or a list of pairs (order is kept, repeats are allowed). Unless ``raw``,
    ``chunked`` or ``add_content_length=False``, a ``Content-Length`` header is added when absent.
    ``chunked=True`` adds ``Transfer-Encoding: chunked`` when absent and frames the body in chunks of
    ``chunk_size`` bytes (one chunk when ``None``), followed by ``trailers``. ``informational`` heads
    (``[(103, {"Link": "..."})]``) are sent before the final head. ``raw`` bytes replace the whole
    built response. ``throttle=(n, seconds)`` writes the body ``n`` bytes at a time with a pause.
    ``tunnel=True`` on a 2xx answer to ``CONNECT`` starts TLS on the connection when the server has
    ``tls=True``.
    """

    __slots__ = (
        "status",
        "reason",
        "headers",
        "body",
        "chunked",
        "chunk_size",
        "trailers",
        "informational",
        "http_version",
        "raw",
        "policy",
        "head_delay",
        "body_delay",
        "throttle",
        "tunnel",
        "add_content_length",
    )

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    chunked: bool
    chunk_size: int | None
    trailers: list[tuple[str, str]]
    informational: list[tuple[int, list[tuple[str, str]]]]
    http_version: str
    raw: bytes | None
    policy: SocketPolicy
    head_delay: float
    body_delay: float
    throttle: tuple[int, float] | None
    tunnel: bool
    add_content_length: bool

    def __init__(
        self,
        status: int = 200,
        reason: str | None = None,
        headers: HeadersLike = None,
        body: bytes | str = b"",
        *,
        chunked: bool = False,
        chunk_size: int | None = None,
        trailers: HeadersLike = None,
        informational: Iterable[tuple[int, HeadersLike]] = (),
        http_version: str = "HTTP/1.1",
        raw: bytes | None = None,
        policy: SocketPolicy = SocketPolicy.KEEP_OPEN,
        head_delay: float = 0.0,
        body_delay: float = 0.0,
        throttle: tuple[int, float] | None = None,
        tunnel: bool = False,
        add_content_length: bool = True,
    ) -> None:
        if chunk_size is not None and chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        if throttle is not None and (throttle[0] <= 0 or throttle[1] < 0):
            raise ValueError("throttle must be (positive byte count, non-negative seconds)")
        set_ = object.__setattr__
        set_(self, "status", int(status))
        set_(self, "reason", _reason(status) if reason is None else reason)
        set_(self, "headers", _pairs(headers))
        set_(self, "body", body.encode("utf-8") if isinstance(body, str) else bytes(body))
        set_(self, "chunked", chunked)
        set_(self, "chunk_size", chunk_size)
        set_(self, "trailers", _pairs(trailers))
        set_(self, "informational", [(int(s), _pairs(h)) for s, h in informational])
        set_(self, "http_version", http_version)
        set_(self, "raw", None if raw is None else bytes(raw))
        set_(self, "policy", policy)
        set_(self, "head_delay", float(head_delay))
        set_(self, "body_delay", float(body_delay))
        set_(self, "throttle", None if throttle is None else (int(throttle[0]), float(throttle[1])))
        set_(self, "tunnel", tunnel)
        set_(self, "add_content_length", add_content_length)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("MockResponse is immutable")

    def __repr__(self) -> str:
        extra = "" if self.policy is SocketPolicy.KEEP_OPEN else f", policy={self.policy.name}"
        if self.raw is not None:
            return f"MockResponse(raw={self.raw[:40]!r}{extra})"
        return f"MockResponse({self.status}, body=<{len(self.body)} bytes>{extra})"

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (case-insensitive), or ``None``."""
        lname = name.lower()
        for n, v in reversed(self.headers):
            if n.lower() == lname:
                return v
        return None

    def encode(self, *, head_only: bool = False) -> tuple[bytes, bytes]:
        """Return ``(head, body)`` as written on the wire; ``head_only`` drops the body (HEAD)."""
        if self.raw is not None:
            return b"", self.raw
        headers = list(self.headers)
        if self.chunked:
            if not _has(headers, "Transfer-Encoding"):
                headers.append(("Transfer-Encoding", "chunked"))
        elif self.add_content_length and not _has(headers, "Content-Length"):
            bodiless = self.status < 200 or self.status in (204, 304)
            if self.body or not bodiless:
                headers.append(("Content-Length", str(len(self.body))))
        head = _encode_head(f"{self.http_version} {self.status} {self.reason}", headers)
        if head_only:
            return head, b""
        if not self.chunked:
            return head, self.body
        size = self.chunk_size or len(self.body) or 1
        parts = []
        for i in range(0, len(self.body), size):
            piece = self.body[i : i + size]
            parts.append(b"%x\r\n%s\r\n" % (len(piece), piece))
        parts.append(b"0\r\n")
        parts.extend(f"{n}: {v}\r\n".encode("latin-1") for n, v in self.trailers)
        parts.append(b"\r\n")
        return head, b"".join(parts)

    def encode_informational(self) -> bytes:
        """The interim (1xx) heads sent before the final one."""
        return b"".join(
            _encode_head(f"{self.http_version} {status} {_reason(status)}", headers)
            for status, headers in self.informational
        )


class RecordedRequest:
    """A request as the server received it, returned by :meth:`MockServer.take_request`.

    >>> rec = server.take_request(timeout=5.0)  # doctest: +SKIP
    >>> rec.request_line, rec.header("host")     # doctest: +SKIP
    ('GET /path?q=1 HTTP/1.1', '127.0.0.1:54321')

    ``target`` is the request-target exactly as sent (origin-form ``/p?q``, absolute-form
    ``http://h/p?q``, authority-form ``h:443`` for CONNECT, or ``*``); ``path`` and ``query`` are the
    parts of it (``path`` is ``""`` for authority-form, ``query`` is ``None`` without ``?``).
    """

    __slots__ = (
        "method",
        "target",
        "path",
        "query",
        "http_version",
        "headers",
        "body",
        "chunked",
        "trailers",
        "sequence_number",
        "connection_index",
        "raw_head",
        "tls",
        "server_name",
        "tls_resumed",
        "client_address",
    )

    def __init__(
        self,
        *,
        method: str,
        target: str,
        http_version: str,
        headers: list[tuple[str, str]],
        body: bytes,
        chunked: bool,
        trailers: list[tuple[str, str]],
        sequence_number: int,
        connection_index: int,
        raw_head: bytes,
        tls: bool,
        server_name: str | None,
        tls_resumed: bool = False,
        client_address: tuple[str, int] | None = None,
    ) -> None:
        self.method = method
        self.target = target
        self.http_version = http_version
        self.headers = headers
        self.body = body
        self.chunked = chunked
        self.trailers = trailers
        self.sequence_number = sequence_number
        self.connection_index = connection_index
        self.raw_head = raw_head
        #: True when the request arrived over TLS (directly or inside a tunnel).
        self.tls = tls
        #: The SNI host name the client sent in its TLS handshake, if any.
        self.server_name = server_name
        #: True when that TLS connection resumed an earlier session (an abbreviated handshake).
        self.tls_resumed = tls_resumed
        #: The client's (ip, port), as the server's socket saw it.
        self.client_address = client_address
        self.path, self.query = _split_target(method, target)

    @property
    def request_line(self) -> str:
        """``"GET /path?q=1 HTTP/1.1"``."""
        return f"{self.method} {self.target} {self.http_version}"

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (case-insensitive), or ``None``."""
        lname = name.lower()
        for n, v in reversed(self.headers):
            if n.lower() == lname:
                return v
        return None

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), in order."""
        lname = name.lower()
        return [v for n, v in self.headers if n.lower() == lname]

    def __repr__(self) -> str:
        return (
            f"<RecordedRequest {self.request_line!r} conn={self.connection_index} "
            f"seq={self.sequence_number} body={len(self.body)} bytes>"
        )


def _split_target(method: str, target: str) -> tuple[str, str | None]:
    if target.startswith("/") or target == "*":
        path, sep, query = target.partition("?")
        return path, (query if sep else None)
    if method == "CONNECT" or "://" not in target:
        return "", None
    parts = urllib.parse.urlsplit(target)
    path = parts.path or "/"
    return path, (parts.query if "?" in target else None)


# --- request parsing -------------------------------------------------------------------------------

# RFC 9112 §3: request-line = method SP request-target SP HTTP-version
#              method = token ; HTTP-version = "HTTP" "/" DIGIT "." DIGIT
# Deviation: any run of visible characters is accepted as the request-target; the server records it.
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e\x80-\xff]+) (HTTP/[0-9]\.[0-9])")
# RFC 9112 §5: field-line = field-name ":" OWS field-value OWS ; field-name = token
# obs-fold (a line starting with SP or HTAB) is rejected with 400, as §5.2 allows.
_FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00\r\n]*?)[ \t]*")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")


def _looks_like_tls_handshake(first: bytes) -> bool:
    """Whether the first bytes of a connection start a TLS handshake record (``0x16 0x03 0x0X``); a
    prefix of one counts too. No HTTP request starts with ``0x16``."""
    return first[:1] == b"\x16" and first[1:2] in (b"", b"\x03") and (len(first) < 3 or first[2] <= 0x04)


class _BadRequest(Exception):
    """The peer sent something that is not an HTTP/1.1 request."""


class _Closed(Exception):
    """The peer closed the connection, or the server is shutting down."""


class _Head:
    __slots__ = ("method", "target", "version", "headers", "raw")

    def __init__(self, method: str, target: str, version: str, headers: list[tuple[str, str]], raw: bytes):
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.raw = raw

    def values(self, name: str) -> list[str]:
        lname = name.lower()
        return [v for n, v in self.headers if n.lower() == lname]

    def tokens(self, name: str) -> list[str]:
        return [t.strip().lower() for v in self.values(name) for t in v.split(",") if t.strip()]


def _parse_head(raw: bytes) -> _Head:
    lines = re.split(rb"\r?\n", raw)
    while lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise _BadRequest("empty head")
    m = _REQUEST_LINE.fullmatch(lines[0])
    if m is None:
        raise _BadRequest(f"bad request line {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        f = _FIELD_LINE.fullmatch(line)
        if f is None:
            raise _BadRequest(f"bad header line {line[:80]!r}")
        headers.append((f.group(1).decode("ascii"), f.group(2).decode("latin-1")))
    method, target, version = (g.decode("latin-1") for g in m.groups())
    return _Head(method, target, version, headers, raw)


class _Reader:
    """Buffered reads from one socket; raises :class:`_Closed` at EOF or on a socket error."""

    __slots__ = ("conn", "buf")

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn
        self.buf = bytearray()

    def _fill(self) -> None:
        try:
            data = self.conn.sock.recv(_RECV)
        except (OSError, ValueError) as exc:
            raise _Closed() from exc
        if not data:
            raise _Closed()
        self.buf += data

    def read_head(self) -> bytes | None:
        """Return the next request head (request line to blank line), or ``None`` at a clean EOF."""
        while True:
            # RFC 9112 §2.2: ignore empty lines received before the request-line.
            start = 0
            while self.buf.startswith(b"\r\n", start) or self.buf.startswith(b"\n", start):
                start += 2 if self.buf[start] == 0x0D else 1
            if start:
                del self.buf[:start]
            m = _HEAD_END.search(self.buf)
            if m is not None:
                head = bytes(self.buf[: m.end()])
                del self.buf[: m.end()]
                return head
            if len(self.buf) > _MAX_HEAD:
                raise _BadRequest("request head too large")
            try:
                self._fill()
            except _Closed:
                if not self.buf:
                    return None
                raise

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_line(self) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line.rstrip(b"\r\n")
            if len(self.buf) > _MAX_LINE:
                raise _BadRequest("line too long")
            self._fill()

    def read_chunked(self) -> tuple[bytes, list[tuple[str, str]]]:
        # RFC 9112 §7.1: chunked-body = *chunk last-chunk trailer-section CRLF
        #                chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
        body = bytearray()
        while True:
            m = _CHUNK_SIZE.fullmatch(self.read_line())
            if m is None:
                raise _BadRequest("bad chunk size line")
            size = int(m.group(1), 16)
            if size == 0:
                break
            body += self.read_exact(size)
            if self.read_line() != b"":
                raise _BadRequest("chunk data not followed by CRLF")
        trailers: list[tuple[str, str]] = []
        while True:
            line = self.read_line()
            if line == b"":
                return bytes(body), trailers
            f = _FIELD_LINE.fullmatch(line)
            if f is None:
                raise _BadRequest("bad trailer line")
            trailers.append((f.group(1).decode("ascii"), f.group(2).decode("latin-1")))


def _body_framing(head: _Head) -> tuple[bool, int]:
    """Return ``(chunked, content_length)`` for a request head (RFC 9112 §6.3)."""
    codings = head.tokens("Transfer-Encoding")
    if codings:
        if codings[-1] != "chunked":
            raise _BadRequest("final transfer coding is not chunked")
        return True, 0
    lengths = {v.strip() for value in head.values("Content-Length") for v in value.split(",")}
    if not lengths:
        return False, 0
    if len(lengths) != 1:
        raise _BadRequest("conflicting Content-Length values")
    (text,) = lengths
    if not text.isdigit() or not text.isascii():
        raise _BadRequest("bad Content-Length")
    return False, int(text)


# --- the server ------------------------------------------------------------------------------------


class _Connection:
    """Book-keeping for one accepted connection; ``sock`` changes when TLS starts."""

    __slots__ = ("index", "sock", "lock", "thread", "closed", "tls", "server_name", "peer")

    def __init__(self, index: int, sock: socket.socket, peer: tuple[str, int] | None = None) -> None:
        self.index = index
        self.sock = sock
        self.peer = peer
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.closed = False
        self.tls = False
        self.server_name: str | None = None

    def wake(self) -> None:
        """Unblock whatever the owning thread is doing on the socket (EOF for reads, error for writes)."""
        with self.lock:
            if self.closed:
                return
            try:
                # The plain socket call, not SSLSocket.shutdown(), which would tear down the TLS object
                # under the feet of the thread using it.
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
            except (OSError, ValueError):
                pass

    def close(self, *, reset: bool = False) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            try:
                if reset:
                    self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            self.sock.close()


Dispatcher = Callable[[RecordedRequest], MockResponse]


#: What a plain (``tls=False``) server sends to a connection that opens with a TLS ClientHello, as nginx
#: does on a plain port; the client's TLS stack reads it as a bad record and fails the handshake at once.
_TLS_ON_PLAIN_PORT = MockResponse(
    400,
    headers=[("Content-Type", "text/plain"), ("Connection", "close")],
    body=b"400 Bad Request: TLS handshake on a plain HTTP port\n",
)


class MockServer:
    """A scripted HTTP/1.1 server on loopback. Start it with ``with`` (or :meth:`start`).

    >>> with MockServer() as server:                                        # doctest: +SKIP
    ...     server.enqueue(MockResponse(200, body=b"hello"))
    ...     urllib.request.urlopen(server.url("/path?q=1")).read()
    ...     rec = server.take_request(timeout=5.0)
    b'hello'
    >>> rec.request_line                                                   # doctest: +SKIP
    'GET /path?q=1 HTTP/1.1'

    Responses are served in the order they were enqueued; ``dispatcher`` (a callable taking a
    :class:`RecordedRequest` and returning a :class:`MockResponse`) replaces the queue when set, and
    ``default_response`` answers when the queue is empty. A request with ``Connection: close`` (or an
    HTTP/1.0 request without ``keep-alive``), or a response with ``Connection: close``, ends the
    connection after the response. The ``DISCONNECT_AT_START`` and ``EXPECT_CONTINUE_REJECT`` policies
    are decided from the queue before the request (or its body) is read; a dispatcher is only asked once
    the whole request is in, so with a dispatcher they act after the request has been read.

    With ``tls=True`` a leaf certificate for ``localhost``, ``127.0.0.1``-``127.0.0.3``, ``::1``,
    ``*.test`` and the names in ``fastnet.testing._tls.LEAF_IDENTITIES`` is issued by ``ca`` (a
    ``trustme.CA``; a new one when ``None``): ``ca_path`` is its PEM file and :meth:`client_ssl_context`
    a client context trusting it. OpenSSL ignores a wildcard right under a top-level label, so for
    Python clients use a listed name (``app.test``, ``origin.test``, ...) or ``<anything>.example.test``.

    ``backlog`` is the listen queue length handed to ``listen()`` (the kernel caps it at
    ``net.core.somaxconn``). The default, ``max(socket.SOMAXCONN, 1024)``, lets a client open hundreds of
    connections at once (``client.map(urls, max_in_flight=256)``) without the SYN queue overflowing
    and connections waiting a second or more for a retransmit. It must be a positive int.

    Without ``tls`` a TLS ClientHello on a new connection is answered with a plain-text ``400 Bad
    Request`` and the connection is closed (as nginx does), so a client that says ``https://`` to the
    plain port fails its handshake at once.
    """

    def __init__(
        self,
        *,
        tls: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        ca: trustme.CA | None = None,
        backlog: int = DEFAULT_BACKLOG,
    ) -> None:
        if isinstance(backlog, bool) or not isinstance(backlog, int):
            raise TypeError(f"backlog must be an int, not {type(backlog).__name__}")
        if backlog < 1:
            raise ValueError(f"backlog must be >= 1, not {backlog}")
        #: The listen queue length passed to ``listen()``.
        self.backlog = backlog
        self.tls = tls
        self.host = host
        self._requested_port = port
        self.port = port
        self.default_response = MockResponse(404, body=b"no response enqueued")
        self.dispatcher: Dispatcher | None = None
        #: Unexpected exceptions raised inside server threads (bugs, or a failing dispatcher).
        self.errors: list[BaseException] = []
        self.ca: trustme.CA | None = ca
        self.ca_path: str | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self._responses: collections.deque[MockResponse] = collections.deque()
        self._requests: queue.Queue[RecordedRequest] = queue.Queue()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connections: list[_Connection] = []
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._started = False
        self._shut_down = False
        self.request_count = 0
        self.connection_count = 0

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> MockServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def start(self) -> None:
        """Bind, listen and start the accept thread. A server starts once."""
        if self._started:
            raise RuntimeError("MockServer already started")
        self._started = True
        if self.tls:
            if self.ca is None:
                self.ca = _tls.new_ca()
            self._ssl_context = _tls.server_context(self.ca)
            self._ssl_context.sni_callback = self._on_sni
            self.ca_path = _tls.write_ca_pem(self.ca)
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self._requested_port))
            listener.listen(self.backlog)
        except BaseException:
            listener.close()
            self._cleanup_files()
            raise
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"MockServer-accept-{self.port}", daemon=True
        )
        self._accept_thread.start()

    def shutdown(self) -> None:
        """Close the listener and every connection and join all threads. Idempotent and fast."""
        if not self._started or self._shut_down:
            return
        self._shut_down = True
        self._stop.set()
        if self._wake_w is not None:
            try:
                self._wake_w.send(b"x")
            except OSError:
                pass
        if self._accept_thread is not None:
            self._accept_thread.join(_JOIN_SECONDS)
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            conn.wake()
        deadline = time.monotonic() + _JOIN_SECONDS
        for conn in connections:
            if conn.thread is not None:
                conn.thread.join(max(0.0, deadline - time.monotonic()))
        for conn in connections:
            conn.close()  # no-op unless a thread failed to finish in time
        for sock in (self._listener, self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        self._cleanup_files()

    def _cleanup_files(self) -> None:
        if self.ca_path is not None:
            try:
                os.unlink(self.ca_path)
            except OSError:
                pass

    # -- scripting ---------------------------------------------------------------------------------

    def enqueue(self, *responses: MockResponse) -> None:
        """Append responses to the queue, served in order."""
        with self._lock:
            self._responses.extend(responses)

    def take_request(self, timeout: float | None = 5.0) -> RecordedRequest:
        """Return the next recorded request; raise :class:`TimeoutError` if none arrives in time."""
        try:
            return self._requests.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"MockServer received no request within {timeout} s") from None

    def url(self, path: str = "/", *, host: str | None = None) -> str:
        """``http(s)://host:port`` + ``path``; ``host`` overrides the name put in the URL."""
        name = self.host if host is None else host
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"
        if not path.startswith("/"):
            path = "/" + path
        return f"{'https' if self.tls else 'http'}://{name}:{self.port}{path}"

    def client_ssl_context(self) -> ssl.SSLContext:
        """A client ``SSLContext`` trusting this server's CA only (``tls=True`` servers)."""
        if self.ca is None:
            raise RuntimeError("client_ssl_context() needs a started MockServer(tls=True)")
        return _tls.client_context(self.ca)

    # -- threads -----------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake_r is not None
        sel = selectors.DefaultSelector()
        try:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stop.is_set():
                ready = sel.select()
                if self._stop.is_set():
                    return
                if not any(key.fileobj is self._listener for key, _ in ready):
                    continue
                try:
                    sock, addr = self._listener.accept()
                except OSError:
                    continue
                sock.settimeout(None)
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
                with self._lock:
                    if self._stop.is_set():
                        sock.close()
                        return
                    conn = _Connection(self.connection_count, sock, (addr[0], addr[1]))
                    self.connection_count += 1
                    self._connections = [c for c in self._connections if not c.closed]
                    self._connections.append(conn)
                    conn.thread = threading.Thread(
                        target=self._serve_connection,
                        args=(conn,),
                        name=f"MockServer-conn-{self.port}-{conn.index}",
                        daemon=True,
                    )
                    conn.thread.start()
        except Exception as exc:  # pragma: no cover - a bug in the server
            self.errors.append(exc)
        finally:
            sel.close()

    def _serve_connection(self, conn: _Connection) -> None:
        reset = False
        try:
            reset = self._serve(conn)
        except (_Closed, OSError, ValueError):
            pass  # the client went away, or shutdown woke us
        except Exception as exc:  # pragma: no cover - a bug in the server
            self.errors.append(exc)
        finally:
            conn.close(reset=reset)

    def _take_disconnect_at_start(self) -> bool:
        with self._lock:
            if self.dispatcher is None and self._responses:
                if self._responses[0].policy is SocketPolicy.DISCONNECT_AT_START:
                    self._responses.popleft()
                    return True
        return False

    def _next_queued(self) -> MockResponse:
        with self._lock:
            return self._responses.popleft() if self._responses else self.default_response

    def _dispatch(self, request: RecordedRequest) -> MockResponse:
        dispatcher = self.dispatcher
        if dispatcher is None:
            return self._next_queued()
        try:
            return dispatcher(request)
        except Exception as exc:
            self.errors.append(exc)
            text = "".join(traceback.format_exception(exc))
            return MockResponse(500, headers={"Content-Type": "text/plain"}, body=text)

    def _on_sni(self, sslsock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
        with self._lock:
            for conn in self._connections:
                if conn.sock is sslsock:
                    conn.server_name = name
                    break

    def _start_tls(self, conn: _Connection) -> None:
        assert self._ssl_context is not None
        with conn.lock:
            if conn.closed or self._stop.is_set():
                raise _Closed()
            conn.sock = self._ssl_context.wrap_socket(
                conn.sock, server_side=True, do_handshake_on_connect=False
            )
        if self._stop.is_set():
            raise _Closed()
        conn.sock.do_handshake()
        conn.tls = True

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self._stop.wait(seconds):
            raise _Closed()

    def _serve(self, conn: _Connection) -> bool:
        """Serve one connection; return True when it must end with a reset."""
        if self._take_disconnect_at_start():
            return False
        if self.tls:
            first = conn.sock.recv(1, socket.MSG_PEEK)
            if not first:
                return False
            if first[0] == 0x16:
                self._start_tls(conn)
        else:
            first = conn.sock.recv(3, socket.MSG_PEEK)
            if not first:
                return False
            if _looks_like_tls_handshake(first):
                # A TLS client on the plain port: answer as nginx does (a plain-text 400, then close),
                # so the client's handshake fails at once instead of waiting for a ServerHello.
                conn.sock.sendall(b"".join(_TLS_ON_PLAIN_PORT.encode()))
                self._lingering_close(conn)
                return False
        reader = _Reader(conn)
        sequence = 0
        while not self._stop.is_set():
            try:
                raw = reader.read_head()
                if raw is None:
                    return False
                head = _parse_head(raw)
                chunked, length = _body_framing(head)
            except _BadRequest as exc:
                body = f"bad request: {exc}\n".encode()
                bad = MockResponse(400, headers=[("Connection", "close")], body=body)
                conn.sock.sendall(b"".join(bad.encode()))
                self._lingering_close(conn)
                return False

            queued = None if self.dispatcher is not None else self._next_queued()
            if queued is not None and queued.policy is SocketPolicy.DISCONNECT_AT_START:
                return False
            rejecting = queued is not None and queued.policy is SocketPolicy.EXPECT_CONTINUE_REJECT
            body = b""
            trailers: list[tuple[str, str]] = []
            if not rejecting:
                has_body = chunked or length > 0
                if has_body and head.version == "HTTP/1.1" and "100-continue" in head.tokens("Expect"):
                    conn.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                try:
                    if chunked:
                        body, trailers = reader.read_chunked()
                    elif length:
                        body = reader.read_exact(length)
                except _BadRequest as exc:
                    bad = MockResponse(400, headers=[("Connection", "close")], body=f"bad request: {exc}\n")
                    conn.sock.sendall(b"".join(bad.encode()))
                    self._lingering_close(conn)
                    return False

            request = RecordedRequest(
                method=head.method,
                target=head.target,
                http_version=head.version,
                headers=head.headers,
                body=body,
                chunked=chunked,
                trailers=trailers,
                sequence_number=sequence,
                connection_index=conn.index,
                raw_head=head.raw,
                tls=conn.tls,
                server_name=conn.server_name,
                tls_resumed=conn.tls and bool(getattr(conn.sock, "session_reused", False)),
                client_address=conn.peer,
            )
            sequence += 1
            with self._lock:
                self.request_count += 1
            self._requests.put(request)
            response = queued if queued is not None else self._dispatch(request)

            policy = response.policy
            if policy is SocketPolicy.DISCONNECT_AT_START or policy is SocketPolicy.DISCONNECT_AFTER_REQUEST:
                return False
            if policy is SocketPolicy.RESET_AFTER_REQUEST:
                return True
            if policy is SocketPolicy.NO_RESPONSE:
                self._stop.wait()
                return False

            self._write_response(conn, response, head_only=head.method == "HEAD")

            if policy is SocketPolicy.STALL_BODY:
                return False  # _write_response only returns from a stall at shutdown
            if policy is SocketPolicy.SHUTDOWN_OUTPUT_AT_END:
                socket.socket.shutdown(conn.sock, socket.SHUT_WR)
                while conn.sock.recv(_RECV):  # wait for the client to close
                    pass
                return False
            if policy is SocketPolicy.CLOSE_AFTER_RESPONSE or policy is SocketPolicy.EXPECT_CONTINUE_REJECT:
                self._lingering_close(conn)
                return False
            if (
                "close" in head.tokens("Connection")
                or (head.version == "HTTP/1.0" and "keep-alive" not in head.tokens("Connection"))
                or any(n.lower() == "connection" and "close" in v.lower() for n, v in response.headers)
            ):
                self._lingering_close(conn)
                return False
            if response.tunnel and head.method == "CONNECT" and 200 <= response.status < 300:
                if self.tls:
                    if reader.buf:
                        # The handshake would start from bytes already buffered here; TLS must wait
                        # for the 2xx, so anything early is a client bug worth failing loudly on.
                        raise _BadRequest("client sent data before the CONNECT response")
                    self._start_tls(conn)
        return False

    def _write_response(self, conn: _Connection, response: MockResponse, *, head_only: bool) -> None:
        self._sleep(response.head_delay)
        if response.informational and response.raw is None:
            conn.sock.sendall(response.encode_informational())
        head, body = response.encode(head_only=head_only)
        if response.policy is SocketPolicy.STALL_BODY:
            conn.sock.sendall(head + body[: len(body) // 2])
            self._stop.wait()
            raise _Closed()
        if not response.body_delay and response.throttle is None:
            conn.sock.sendall(head + body)
            return
        if head:
            conn.sock.sendall(head)
        self._sleep(response.body_delay)
        if response.throttle is None:
            conn.sock.sendall(body)
            return
        step, pause = response.throttle
        for i in range(0, len(body), step):
            if i:
                self._sleep(pause)
            conn.sock.sendall(body[i : i + step])

    def _lingering_close(self, conn: _Connection) -> None:
        """Half-close, then drain what the client still sends so closing does not turn into a reset."""
        try:
            socket.socket.shutdown(conn.sock, socket.SHUT_WR)
            conn.sock.settimeout(_LINGER_SECONDS)
            deadline = time.monotonic() + _LINGER_SECONDS
            drained = 0
            while time.monotonic() < deadline and drained < 1 << 20:
                data = conn.sock.recv(_RECV)
                if not data:
                    break
                drained += len(data)
        except (OSError, ValueError):
            pass
