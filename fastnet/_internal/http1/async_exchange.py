"""The exchange: one HTTP/1.1 request and response on one connection.

.. async-only
``AsyncExchange`` is the asyncio client's. This file is also the source of the blocking ``Exchange``
(``_exchange_py.py``, compiled as ``_exchange_c``): ``scripts/unasync.py`` writes it from this one, so the
two cannot drift. Edit this file, then run the script.
.. end
.. sync-only
``Exchange`` is the blocking client's: the pure-Python twin of the compiled ``_exchange_c`` (import both
through ``fastnet._internal.http1.exchange``), written by ``scripts/unasync.py`` from ``async_exchange.py``.
Edit that file, then run the script.
.. end

Theory of operation
-------------------
The decisions live in the codec (``codec.py``: what to write, how a body is framed, what a head means)
and the parser (``parser.py``: response framing, when a body ends); the exchange is the thin layer of
I/O calls on its connection that drives them: ``write``, ``drain``, ``fill`` and ``receive_body``, which
a blocking connection makes with socket calls and an asyncio one with the event loop's transport. A
keep-alive request costs two system calls: one send of the head (and a small body), one receive into
the connection's buffer, which usually holds the whole head and a small body at once.

Bounds, whatever a peer declares or compresses:

* a ``Content-Length`` body is received straight into the ``bytes`` object that becomes the content,
  allocated as the bytes arrive (``receive_exact``), and refused with ``BodyTooLargeError`` before a
  byte is read when it declares more than the call's ``max_body_size``;
* a compressed body (gzip, deflate, br, zstd) is decoded at most ``DECODED_CHUNK`` bytes at a time
  (zstd: plus one 128 KiB block), and ``.content`` stops with ``BodyTooLargeError`` once the decoded size
  passes ``max_body_size``; a stream that ends before its end marker is a ``ProtocolError`` even when the
  framing said the body was complete;
* at most ``MAX_INTERIM_RESPONSES`` interim (1xx) heads are skipped.

The request is written exactly as its framing headers say (``codec.request_framing``): a body of
unknown length with a ``Content-Length`` goes out unframed and must have exactly that many bytes. When
writing fails, the exchange still tries to read a response: a server that answers early (a 413) and
closes gives a response, not a write error. That wait is bounded by the shorter of the read and write
timeouts, so a server that neither reads nor answers gives the write's error (``WriteTimeout``).

The exchange reports to its ``ConnectionUser`` (the call): events as they happen, ``exchange_done``
when the body ended (or was abandoned), ``body_failed`` when it could not be read (or reading it was
interrupted: a task cancelled, a ``KeyboardInterrupt``). It is the ``ResponseBodySource`` of the
response it produced.
"""

from __future__ import annotations

import time
import zlib
from typing import TYPE_CHECKING, Any

from fastnet._internal.clock import monotonic
from fastnet._internal.http1.codec import (
    CHUNKED,
    LAST_CHUNK,
    MAX_INTERIM_RESPONSES,
    SMALL_BODY,
    frame_chunk,
    map_io_error,
)
from fastnet._internal.http1.decoders import DecodeError
from fastnet._internal.http1.parser import BODY_LENGTH, BODY_NONE, BODY_UNTIL_CLOSE
from fastnet.exceptions import (
    BodyTooLargeError,
    CanceledError,
    ConnectionClosedError,
    NetworkError,
    ProtocolError,
)
from fastnet.response import ResponseBodySource

if TYPE_CHECKING:
    from fastnet._internal.connection.async_real_connection import AsyncRealConnection
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet.request import Request, RequestBody
    from fastnet.timings import Timings

__all__ = ["DECODED_CHUNK", "DRAIN_TIMEOUT", "AsyncExchange", "new_async_exchange"]

#: How long ``close()`` on an unread body may drain it to keep the connection.
DRAIN_TIMEOUT = 0.1
#: The most a decoded (decompressed) piece of a streamed body can be.
DECODED_CHUNK = 1 << 20
# A declared length beyond this cannot be held in memory on any machine (and would overflow C sizes).
_UNHOLDABLE = 1 << 62

#: A parsed response head: status, reason, version, headers, body mode, length, keep-alive, encoding.
Head = tuple[int, str, str, list[tuple[str, str]], int, int, bool, str]


class AsyncExchange(ResponseBodySource):
    """One request/response on one connection: write the request, read the head, stream the body.

    Built by ``new_async_exchange`` (no ``__init__``: the per-request path skips argument parsing)."""

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
        "headers_started",
        "body_started",
        "timings",
        "pending",
    )
    user: ConnectionUser
    connection: AsyncRealConnection
    request: Request
    body_mode: int
    keep_alive: bool
    decompressor: Any  # a decoder (http1/decoders.py) when the Bridge decodes the body transparently
    body_bytes: int  # body bytes received from the wire (before decoding)
    failed: bool
    head_request: bool
    content_encoding: str
    headers_started: bool  # response_headers_start has been reported
    body_started: bool  # response_body_start has been reported
    timings: Timings | None  # what the response's timings are made of (this exchange's timestamps)
    pending: memoryview | None  # what readinto() could not fit of a decoded piece (unset until then)

    # -- writing --------------------------------------------------------------------------------

    async def write_request(
        self, head: bytes, body: RequestBody | None, framing: int, expect_continue: bool
    ) -> Head | None:
        """Send the request, its body framed as ``framing`` says (``codec.request_framing``).

        Returns a final head read in place of sending the rest: the answer to ``Expect: 100-continue``
        when it was not ``100``, or a response the server sent while the upload failed. Otherwise None.
        """
        conn = self.connection
        user = self.user
        events = user.events
        timings = self.timings
        if timings is not None:
            timings.request_start = monotonic()
        if events is not None:
            events.request_headers_start(user)
        wrote_head = False
        try:
            if body is None:
                conn.write(head if framing != CHUNKED else head + LAST_CHUNK)
                if timings is not None:
                    timings.request_end = monotonic()
                if events is not None:
                    events.request_headers_end(user, self.request)
                return None
            data = body.content
            if data is not None and framing == len(data) and len(data) <= SMALL_BODY and not expect_continue:
                conn.write(head + data if data else head)
                if timings is not None:
                    timings.request_end = monotonic()
                if events is not None:
                    events.request_headers_end(user, self.request)
                    events.request_body_start(user)
                    events.request_body_end(user, len(data))
                return None
            conn.write(head)
            wrote_head = True
            if events is not None:
                events.request_headers_end(user, self.request)
            if expect_continue:
                early = await self.read_head(False, True)
                if early is not None:
                    return early
            await self.write_body(body, framing)
            if timings is not None:
                timings.request_end = monotonic()
        except NetworkError as exc:
            self.failed = True
            if events is not None:
                events.request_failed(user, exc)
            raise
        except OSError as exc:
            self.failed = True
            err = self.map_error(exc, "write")
            if events is not None:
                events.request_failed(user, err)
            if wrote_head:
                early = await self._answer_after_failed_write()
                if early is not None:
                    return early
            raise err from exc
        return None

    async def write_body(self, body: RequestBody, framing: int) -> None:
        """The body, chunked or as exactly ``framing`` bytes (a shorter or longer body is an error)."""
        conn = self.connection
        user = self.user
        events = user.events
        if events is not None:
            events.request_body_start(user)
        total = 0
        chunked = framing == CHUNKED
        async for chunk in body.achunks():
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            total += len(chunk)
            if chunked:
                conn.write(frame_chunk(chunk))
            elif total > framing:
                raise ProtocolError(
                    f"request body is longer than its Content-Length of {framing} bytes "
                    f"(at least {total}); nothing past the declared length was sent",
                    url=self.request.url,
                    phase="write",
                )
            else:
                conn.write(chunk)
            await conn.drain()
        if chunked:
            conn.write(LAST_CHUNK)
        elif total != framing:
            raise ProtocolError(
                f"request body was {total} bytes, but its Content-Length is {framing}",
                url=self.request.url,
                phase="write",
            )
        if events is not None:
            events.request_body_end(user, total)

    async def _answer_after_failed_write(self) -> Head | None:
        """A response the server sent before it stopped reading (a 413, say), or None.

        The wait is the shorter of the read and the write timeout (whichever is set): a server that
        neither reads nor answers ends the call with the write's error soon after the write timed out,
        not after a whole read timeout more, nor never when there is no read timeout. A head that does
        arrive is read on; its body under the read timeout again."""
        conn = self.connection
        conn.no_new_exchanges = True
        read_timeout = conn.read_timeout
        write_timeout = conn.write_timeout
        grace = read_timeout
        if write_timeout > 0 and (read_timeout <= 0 or write_timeout < read_timeout):
            grace = write_timeout
        try:
            if grace != read_timeout:
                conn.set_timeouts(grace, write_timeout)
            try:
                return await self.read_head(self.head_request)
            finally:
                if grace != read_timeout:
                    conn.set_timeouts(read_timeout, write_timeout)
        except (NetworkError, OSError):
            return None

    # -- reading --------------------------------------------------------------------------------

    async def fill(self, in_head: bool) -> int:
        """One receive into the connection's buffer, fed to the parser. Returns the byte count."""
        conn = self.connection
        try:
            n = await conn.fill()
        except OSError as exc:
            self.failed = True
            raise self.map_error(exc, "read") from exc
        if n:
            if in_head:
                timings = self.timings
                if timings is not None and timings.first_byte_at == 0.0:
                    timings.first_byte_at = monotonic()
        elif self.user.canceled:  # cancel() shut the socket down: that is no peer EOF
            self.failed = True
            raise self.map_error(CanceledError("canceled"), "read")
        return n

    async def read_head(self, head_request: bool, expect_continue: bool = False) -> Head | None:
        """Read up to the final response head, skipping interim (1xx) ones; returns the head tuple.

        With ``expect_continue`` a ``100`` returns None (send the body) and any other head is returned.
        ``response_headers_start`` is reported once a head has been read (for ``Expect: 100-continue``,
        once the ``100`` has: the request body's events then come inside the response head's).
        """
        parser = self.connection.parser
        received = False
        interim = 0
        while True:
            try:
                head = parser.read_head(head_request)
            except ProtocolError:
                self.failed = True
                self.connection.no_new_exchanges = True
                raise
            if head is not None:
                if not self.headers_started:
                    self.headers_started = True
                    events = self.user.events
                    if events is not None:
                        events.response_headers_start(self.user)
                status = head[0]
                if status < 200 and status != 101:
                    if expect_continue and status == 100:
                        return None
                    interim += 1
                    if interim > MAX_INTERIM_RESPONSES:
                        self.failed = True
                        self.connection.no_new_exchanges = True
                        raise ProtocolError(
                            f"more than {MAX_INTERIM_RESPONSES} interim (1xx) responses before the final one",
                            url=self.request.url,
                            phase="read",
                        )
                    continue
                return head
            n = await self.fill(True)
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

    async def _next_raw(self) -> bytes | None:
        """The next piece of the body as framed on the wire (never empty), or None at its end."""
        parser = self.connection.parser
        user = self.user
        while True:
            data = parser.read_body()
            if data is None:
                return None
            if data:
                self.body_bytes += len(data)
                return data
            if user.canceled:
                raise self.map_error(CanceledError("canceled while reading the body"), "read")
            if await self.fill(False) == 0:
                if user.canceled:
                    raise user.canceled_error(self.request)
                parser.feed(b"")  # EOF: the parser ends an until-close body, or raises for a short one

    async def aread_chunk(self) -> bytes | None:
        """The next piece of the decoded body (never empty), or None at the end."""
        if self.done:
            return None
        if not self.body_started:
            self._start_body()
        try:
            decompressor = self.decompressor
            if decompressor is None:
                piece = await self._next_raw()
                if piece is None:
                    self.finish(True)
                return piece
            while True:
                tail = decompressor.unconsumed_tail
                data: bytes
                if tail:
                    data = decompressor.decompress(tail, DECODED_CHUNK)
                else:
                    raw = await self._next_raw()
                    if raw is None:
                        rest: bytes = decompressor.flush()
                        if not decompressor.eof:
                            raise ProtocolError(
                                f"truncated {self.content_encoding} body: it ended before its end marker",
                                url=self.request.url,
                                phase="read",
                            )
                        self.finish(True)
                        return rest if rest else None
                    data = decompressor.decompress(raw, DECODED_CHUNK)
                if data:
                    return data
        except (zlib.error, DecodeError) as exc:
            err = ProtocolError(
                f"invalid {self.content_encoding} body: {exc}", url=self.request.url, phase="read"
            )
            self.fail_body(err)
            raise err from exc
        except NetworkError as exc:
            self.fail_body(exc)
            raise
        except BaseException:
            self.interrupted()
            raise

    async def areadinto(self, buffer: memoryview) -> int:
        """Up to ``len(buffer)`` bytes of the decoded body into ``buffer`` (a byte view): the count, 0 at
        the end. A Content-Length body without a content coding, on a connection with a socket of its own
        (the blocking client's), goes from the socket straight into ``buffer`` once the bytes that came
        with the head are used up; any other body is copied in from its decoded pieces."""
        pending = getattr(self, "pending", None)
        if pending:  # a view: handing out its rest costs no copy of it (slicing bytes did, per call)
            n = len(pending) if len(pending) < len(buffer) else len(buffer)
            buffer[:n] = pending[:n]
            self.pending = pending[n:]
            return n
        if self.done:
            return 0
        if not self.body_started:
            self._start_body()
        if (
            self.decompressor is None
            and self.body_mode == BODY_LENGTH
            and self.connection.recv_into is not None
        ):
            return self._receive_into(buffer)
        data = await self.aread_chunk()
        if data is None:
            return 0
        n = len(data)
        if n > len(buffer):
            n = len(buffer)
            self.pending = memoryview(data)[n:]
        buffer[:n] = memoryview(data)[:n]
        return n

    def _receive_into(self, buffer: memoryview) -> int:
        """``readinto`` for a Content-Length body on a blocking socket: what the parser holds first (a
        part given back when it does not fit), else one ``recv_into`` into ``buffer`` itself."""
        conn = self.connection
        parser = conn.parser
        user = self.user
        try:
            remaining = parser.body_remaining
            if remaining <= 0:
                parser.read_body()  # None: complete
                self.finish(True)
                return 0
            want = len(buffer) if len(buffer) < remaining else remaining
            held = parser.take_buffered()
            if held:
                n = len(held) if len(held) < want else want
                buffer[:n] = memoryview(held)[:n]
                parser.skip_body_bytes(n)
                if n < len(held):
                    parser.feed(memoryview(held)[n:])
            else:
                if user.canceled:
                    raise self.map_error(CanceledError("canceled while reading the body"), "read")
                try:
                    n = conn.recv_into(buffer[:want])
                except OSError as exc:
                    self.failed = True
                    raise self.map_error(exc, "read") from exc
                if n == 0:
                    if user.canceled:
                        raise user.canceled_error(self.request)
                    raise ProtocolError(
                        f"unexpected end of stream: {remaining} body bytes missing",
                        url=self.request.url,
                        phase="read",
                    )
                parser.skip_body_bytes(n)
            self.body_bytes += n
            if parser.body_remaining == 0:
                parser.read_body()  # None: complete
                self.finish(True)
            return n
        except NetworkError as exc:
            self.fail_body(exc)
            raise
        except BaseException:
            self.interrupted()
            raise

    async def aread_all(self) -> bytes:
        """The rest of the body, at most the call's ``max_body_size`` bytes decoded. A Content-Length body
        is received straight into its final buffer."""
        conn = self.connection
        parser = conn.parser
        if self.done:
            return b""
        if not self.body_started:
            self._start_body()
        if self.body_mode != BODY_LENGTH or self.decompressor is not None:
            return await self.read_rest()
        first = parser.read_body()
        if first is None:
            self.finish(True)
            return b""
        remaining = parser.body_remaining
        limit = self.user.max_body_size
        if remaining > _UNHOLDABLE or (limit > 0 and remaining > limit - len(first)):
            self._too_large(f"the response declares a {len(first) + remaining}-byte body")
        if remaining <= 0:
            self.body_bytes += len(first)
            if parser.read_body() is None:
                self.finish(True)
                return first
            return first + await self.read_rest()
        # big body: receive the rest straight into the bytes object that becomes the content
        total = len(first) + remaining
        user = self.user
        try:
            content, received = await conn.receive_body(first, total)
            if received < total and user.canceled:
                raise user.canceled_error(self.request)
            if received < total:
                raise ProtocolError(f"unexpected end of stream: {total - received} body bytes missing")
            if user.canceled:
                raise user.canceled_error(self.request)  # CallTimeout when the watchdog canceled it
        except NetworkError as exc:
            self.fail_body(exc)
            raise
        except OSError as exc:
            err = self.map_error(exc, "read")
            self.fail_body(err)
            raise err from exc
        except BaseException:
            self.interrupted()
            raise
        self.body_bytes += total
        if parser.read_body() is None:
            self.finish(True)
        return content

    async def read_rest(self) -> bytes:
        """The rest of the body piece by piece, stopping past ``max_body_size`` decoded bytes."""
        parts = []
        size = 0
        limit = self.user.max_body_size
        while True:
            data = await self.aread_chunk()
            if data is None:
                break
            size += len(data)
            if limit > 0 and size > limit:
                self._too_large(f"the decoded body is over {size - len(data)} bytes and growing")
            parts.append(data)
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def body_limit(self) -> int:
        return self.user.max_body_size

    def _too_large(self, what: str) -> None:
        err = BodyTooLargeError(
            f"response body too large: {what}, more than max_body_size={self.user.max_body_size}",
            url=self.request.url,
            phase="read",
        )
        self.fail_body(err)
        raise err

    def _start_body(self) -> None:
        self.body_started = True
        events = self.user.events
        if events is not None:
            events.response_body_start(self.user)
        # (callers test body_started first: the flag, not this call, is on the per-request path)

    # -- ending ---------------------------------------------------------------------------------

    def finish(self, complete: bool) -> None:
        """The body is done (complete) or abandoned: the call gets the connection back, reusable or not."""
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
        timings = self.timings
        if timings is not None:
            timings.body_end = monotonic()  # read to the end or given up: timings.total stops here
        if complete:
            if events is not None:
                if not self.body_started:
                    self._start_body()  # nothing was read: the body ended as it was opened
                events.response_body_end(user, self.body_bytes)
        user.exchange_done(conn, reusable)

    def interrupted(self) -> None:
        """Reading the body was interrupted (a task cancelled, a ``KeyboardInterrupt``): the connection is
        closed and the call fails."""
        self.fail_body(CanceledError("interrupted while reading the response body", url=self.request.url))

    def fail_body(self, exc: NetworkError) -> None:
        """Reading the body failed: the connection is done for, and so is the call."""
        if self.done:
            return
        self.done = True
        conn = self.connection
        conn.no_new_exchanges = True
        conn.exchange_count += 1
        timings = self.timings
        if timings is not None:
            timings.body_end = monotonic()
        self.user.body_failed(exc, conn)

    async def aclose_body(self) -> None:
        """Early close: drain the rest within DRAIN_TIMEOUT to keep the connection, else close it."""
        if self.done:
            return
        conn = self.connection
        if self.body_mode == BODY_UNTIL_CLOSE or self.user.canceled or conn.closed:
            self.finish(False)
            return
        self.decompressor = None
        parser = conn.parser
        try:
            # first what the parser holds: a short body (a redirect's) mostly came with the head, and
            # then no socket call is needed, not even the two that set and restore the drain timeout
            data = parser.read_body()
            while data:
                self.body_bytes += len(data)
                data = parser.read_body()
            if data is None:
                self.finish(True)
                return
        except BaseException:
            self.finish(False)
            raise
        deadline = time.monotonic() + DRAIN_TIMEOUT
        saved = conn.read_timeout
        try:
            conn.set_timeouts(DRAIN_TIMEOUT, conn.write_timeout)
            while time.monotonic() < deadline:
                data = parser.read_body()
                if data is None:
                    conn.set_timeouts(saved, conn.write_timeout)
                    self.finish(True)
                    return
                if data:
                    self.body_bytes += len(data)
                elif await self.fill(False) == 0:
                    break
        except (OSError, NetworkError):
            pass
        except BaseException:
            self.finish(False)
            raise
        self.finish(False)

    # unasync: skip
    def close_body(self) -> None:
        """``response.close()`` (not ``await response.aclose()``) on a streaming asyncio response: no
        waiting to drain here, so the connection is closed."""
        self.finish(False)

    # unasync: skip end

    def abandon(self) -> None:
        """The response was collected unread: close the connection. Runs from a finalizer, so it takes
        no lock and reports no event: the pool settles its count the next time it is used."""
        if self.done:
            return
        self.done = True
        conn = self.connection
        conn.no_new_exchanges = True
        conn.close()
        pool = conn.pool
        if pool is not None:
            pool.discard_later(conn)

    def map_error(self, exc: BaseException, phase: str) -> NetworkError:
        user = self.user
        url = self.request.url if self.request is not None else None
        return map_io_error(exc, phase, url, user.canceled, user.timed_out)


def new_async_exchange(
    user: ConnectionUser, connection: AsyncRealConnection, request: Request
) -> AsyncExchange:
    """A fresh exchange on ``connection`` for ``request`` (no ``__init__``: the per-request path)."""
    exchange = AsyncExchange.__new__(AsyncExchange)
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
    exchange.headers_started = False
    exchange.body_started = False
    exchange.timings = None
    return exchange
