"""``Exchange``: one HTTP/1.1 request and response on one connection, driven by blocking socket calls.

Theory of operation
-------------------
The decisions live in the codec (``codec.py``: what to write, what a head means) and the parser
(``parser.py``: framing, when a body ends); this class is the thin layer of socket calls that drives
them. A keep-alive request costs two system calls: one ``sendall`` of the head (and a small body), one
``recv_into`` the connection's buffer, which usually returns the whole head and a small body at once. A
large ``Content-Length`` body is received straight into the ``bytes`` object that becomes the content.

The exchange reports to its ``ConnectionUser`` (the call): events as they happen, ``body_failed`` when
the body cannot be read, and ``release_connection`` once the body ended (reusable: back to the pool) or
was abandoned (closed). It is the ``ResponseBodySource`` of the response it produced.

Pure-Python twin of the compiled ``_exchange_c``; import both through ``fastnet._internal.http1.exchange``.
"""

from __future__ import annotations

import time
import zlib
from typing import TYPE_CHECKING, Any

from fastnet._internal.http1.codec import LAST_CHUNK, SMALL_BODY, frame_chunk, map_io_error
from fastnet._internal.http1.parser import BODY_LENGTH, BODY_NONE, BODY_UNTIL_CLOSE, receive_exact
from fastnet.exceptions import CanceledError, ConnectionClosedError, NetworkError, ProtocolError
from fastnet.response import ResponseBodySource

if TYPE_CHECKING:
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.real_connection import RealConnection
    from fastnet.request import Request, RequestBody

__all__ = ["DRAIN_TIMEOUT", "Exchange", "new_exchange"]

#: How long ``close()`` on an unread body may drain it to keep the connection.
DRAIN_TIMEOUT = 0.1

#: A parsed response head: status, reason, version, headers, body mode, length, keep-alive, encoding.
Head = tuple[int, str, str, list[tuple[str, str]], int, int, bool, str]


class Exchange(ResponseBodySource):
    """One request/response on one connection: write the request, read the head, stream the body.

    Built by ``new_exchange`` (no ``__init__``: the per-request path skips argument parsing)."""

    __slots__ = (
        "user",
        "connection",
        "request",
        "body_mode",
        "keep_alive",
        "decompressor",
        "body_bytes",
        "failed",
        "head_request",
        "content_encoding",
    )
    user: ConnectionUser
    connection: RealConnection
    request: Request
    body_mode: int
    keep_alive: bool
    decompressor: Any  # a zlib decompressobj when the Bridge decodes gzip transparently
    body_bytes: int
    failed: bool
    head_request: bool
    content_encoding: str

    # -- writing --------------------------------------------------------------------------------

    def write_request(self, head: bytes, body: RequestBody | None, expect_continue: bool) -> Head | None:
        """Send the request. With ``expect_continue``, a final head that came instead of ``100 Continue``
        is returned (the body was not sent); otherwise None."""
        conn = self.connection
        sock = conn.sock
        user = self.user
        events = user.events
        if events is not None:
            events.request_headers_start(user)
        try:
            if body is None:
                conn.sendall(head)
                if events is not None:
                    events.request_headers_end(user, self.request)
                return None
            data = body.content
            if data is not None and len(data) <= SMALL_BODY and not expect_continue:
                sock.sendall(head + data if data else head)
                if events is not None:
                    events.request_headers_end(user, self.request)
                    events.request_body_start(user)
                    events.request_body_end(user, len(data))
                return None
            sock.sendall(head)
            if events is not None:
                events.request_headers_end(user, self.request)
            if expect_continue:
                early = self.read_head(False, True)
                if early is not None:
                    return early
            self.write_body(body)
        except NetworkError:
            self.failed = True
            raise
        except OSError as exc:
            self.failed = True
            raise self.map_error(exc, "write") from exc
        return None

    def write_body(self, body: RequestBody) -> None:
        sock = self.connection.sock
        user = self.user
        events = user.events
        if events is not None:
            events.request_body_start(user)
        total = 0
        chunked = body.length < 0
        for chunk in body.chunks():
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            total += len(chunk)
            if chunked:
                sock.sendall(frame_chunk(chunk))
            else:
                sock.sendall(chunk)
        if chunked:
            sock.sendall(LAST_CHUNK)
        elif total != body.length:
            raise ProtocolError(f"request body was {total} bytes, but its declared length is {body.length}")
        if events is not None:
            events.request_body_end(user, total)

    # -- reading --------------------------------------------------------------------------------

    def fill(self, in_head: bool) -> int:
        """One ``recv_into`` the connection's buffer, fed to the parser. Returns the byte count."""
        conn = self.connection
        try:
            n: int = conn.recv_into(conn.buf)
        except OSError as exc:
            self.failed = True
            raise self.map_error(exc, "read") from exc
        if n:
            conn.parser.feed_from(conn.buf, n)
        elif self.user.canceled:  # cancel() shut the socket down: that is no peer EOF
            self.failed = True
            raise self.map_error(CanceledError("canceled"), "read")
        return n

    def read_head(self, head_request: bool, expect_continue: bool = False) -> Head | None:
        """Read up to the final response head (skipping 1xx); returns the parser's head tuple.

        With ``expect_continue`` a ``100`` returns None (send the body) and any other head is returned.
        """
        parser = self.connection.parser
        received = False
        while True:
            try:
                head = parser.read_head(head_request)
            except ProtocolError:
                self.failed = True
                self.connection.no_new_exchanges = True
                raise
            if head is not None:
                status = head[0]
                if status < 200 and status != 101:
                    if expect_continue and status == 100:
                        return None
                    continue
                return head
            n = self.fill(True)
            if n == 0:
                self.failed = True
                self.connection.no_new_exchanges = True
                if self.user.canceled:
                    raise self.user.canceled_error(self.request)
                if not received:
                    raise ConnectionClosedError("unexpected end of stream before the response head")
                parser.feed(b"")
                head = parser.read_head(head_request)
                raise ProtocolError("unexpected end of stream in the response head")
            received = True

    def read_chunk(self) -> bytes | None:
        """The next piece of the decoded body (never empty), or None at the end."""
        if self.done:
            return None
        parser = self.connection.parser
        user = self.user
        while True:
            try:
                data = parser.read_body()
                if data is None:
                    self.finish(True)
                    return None
                if not data:
                    if user.canceled:
                        raise self.map_error(CanceledError("canceled while reading the body"), "read")
                    n = self.fill(False)
                    if n == 0:
                        if user.canceled:
                            raise user.canceled_error(self.request)
                        parser.feed(b"")
                    continue
            except NetworkError as exc:
                self.finish(False)
                user.body_failed(exc)
                raise
            self.body_bytes += len(data)
            decompressor = self.decompressor
            if decompressor is not None:
                try:
                    data = decompressor.decompress(data)
                except zlib.error as exc:
                    self.finish(False)
                    err = ProtocolError(f"invalid gzip body: {exc}", url=self.request.url, phase="read")
                    user.body_failed(err)
                    raise err from exc
                if not data:
                    continue
            return data

    def read_all(self) -> bytes:
        """The rest of the body. Content-Length bodies are received straight into their final buffer."""
        conn = self.connection
        parser = conn.parser
        if self.body_mode == BODY_LENGTH and self.decompressor is None and not self.done:
            first = parser.read_body()
            if first is None:
                self.finish(True)
                return b""
            remaining = parser.body_remaining
            if remaining <= 0:
                self.body_bytes += len(first)
                if parser.read_body() is None:
                    self.finish(True)
                    return first
                return first + self.read_rest()
            # big body: receive the rest straight into the bytes object that becomes the content
            total = len(first) + remaining
            user = self.user
            try:
                content, received = receive_exact(conn.recv_into, first, total)
                if received < total and user.canceled:
                    raise user.canceled_error(self.request)
                if received < total:
                    parser.skip_body_bytes(received - len(first))
                    parser.feed(b"")
                    parser.read_body()
                    raise ProtocolError(f"unexpected end of stream: {total - received} body bytes missing")
                if user.canceled:
                    raise CanceledError("canceled while reading the response body")
            except NetworkError as exc:
                self.finish(False)
                user.body_failed(exc)
                raise
            except OSError as exc:
                self.finish(False)
                err = self.map_error(exc, "read")
                user.body_failed(err)
                raise err from exc
            parser.skip_body_bytes(remaining)
            self.body_bytes += total
            if parser.read_body() is None:
                self.finish(True)
            return content
        return self.read_rest()

    def read_rest(self) -> bytes:
        parts = []
        while True:
            data = self.read_chunk()
            if data is None:
                break
            parts.append(data)
        if self.decompressor is not None:
            tail = self.decompressor.flush()
            if tail:
                parts.append(tail)
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def finish(self, complete: bool) -> None:
        """The body is done (complete) or abandoned: give the connection back or close it."""
        if self.done:
            return
        self.done = True
        conn = self.connection
        reusable = complete and self.keep_alive and not conn.no_new_exchanges
        if reusable and conn.parser.take_buffered():
            reusable = False  # the server sent more than it promised: never reuse this socket
        if not reusable:
            conn.no_new_exchanges = True
        conn.exchange_count += 1
        user = self.user
        events = user.events
        if events is not None and complete:
            events.response_body_end(user, self.body_bytes)
        user.release_connection(conn, reusable)

    def close_body(self) -> None:
        """Early close: drain the rest within DRAIN_TIMEOUT to keep the connection, else close it."""
        if self.done:
            return
        conn = self.connection
        if self.body_mode == BODY_UNTIL_CLOSE or self.user.canceled or conn.closed:
            self.finish(False)
            return
        deadline = time.monotonic() + DRAIN_TIMEOUT
        saved = conn.read_timeout
        try:
            conn.set_timeouts(DRAIN_TIMEOUT, conn.write_timeout)
            self.decompressor = None
            parser = conn.parser
            while time.monotonic() < deadline:
                data = parser.read_body()
                if data is None:
                    conn.set_timeouts(saved, conn.write_timeout)
                    self.finish(True)
                    return
                if not data:
                    if self.fill(False) == 0:
                        break
        except (OSError, NetworkError):
            pass
        self.finish(False)

    def map_error(self, exc: BaseException, phase: str) -> NetworkError:
        user = self.user
        url = self.request.url if self.request is not None else None
        return map_io_error(exc, phase, url, user.canceled, user.timed_out)


def new_exchange(user: ConnectionUser, connection: RealConnection, request: Request) -> Exchange:
    """A fresh exchange on ``connection`` for ``request`` (no ``__init__``: the per-request path)."""
    exchange = Exchange.__new__(Exchange)
    exchange.user = user
    exchange.connection = connection
    exchange.request = request
    exchange.body_mode = BODY_NONE
    exchange.keep_alive = False
    exchange.done = False
    exchange.decompressor = None
    exchange.body_bytes = 0
    exchange.failed = False
    exchange.head_request = False
    exchange.content_encoding = ""
    return exchange
