"""HTTP/1.1 response parser, pure-Python twin built on h11 (the oracle for the compiled twin).

Theory of operation: the parser keeps its own buffer of received bytes and hands h11 only complete
units: a whole response head once its end (the first ``LF [CR] LF``) is in the buffer, then for a
chunked body each chunk-size line, the chunk data, the ``CRLF`` after it and the trailer block. Before a
unit goes to h11 the parser applies the checks h11 does not make; h11 then decides the syntax (status
line, header lines, Content-Length and Transfer-Encoding values, chunk lines) and decodes chunked data.
Each exchange gets a fresh ``h11.Connection(h11.CLIENT)`` that "sent" a synthetic ``GET``/``HEAD`` (which
proposes an upgrade so that a ``101`` is accepted); a fresh one rather than ``start_next_cycle()``
because h11 refuses to reuse a connection after an HTTP/1.0 response, which we allow with
``Connection: keep-alive``. Content-Length and until-close bodies are counted here: h11 has nothing to
check in them, and :meth:`ResponseParser.skip_body_bytes` needs to move the count without the bytes.

Header names and values are taken from the raw lines h11 accepted (h11 lowercases names, drops
repeated Content-Length headers and lowercases Transfer-Encoding; we keep what was received).

Stricter than h11 (also in the compiled twin; see ``DELIBERATE_DIFFERENCES`` in the test corpus):
HTTP versions other than 1.0/1.1, obs-fold continuation lines, both Content-Length and
Transfer-Encoding, a 204 with Content-Length > 0, Content-Length or chunk sizes of 2**63 or more, a
header block (or trailer block) over ``max_header_size`` bytes, any line over ``max_line_size`` bytes.
Differs on purpose: an HTTP/1.0 response with ``Connection: keep-alive`` keeps the connection.

Line endings: ``CRLF`` and bare ``LF`` are both accepted in the head and in trailers (as h11 does; a lone
``CR`` inside a line is rejected). Chunk-size lines must end in ``CRLF`` and chunk data must be followed
by ``CRLF`` (as h11 requires).

EOF (``feed(b"")``): before any byte of a head → :class:`ConnectionClosedError`; inside a head or a
length/chunked body → :class:`ProtocolError` ("unexpected end of stream ..."); ends an until-close body.
"""

from __future__ import annotations

import re
from typing import Any

import h11

from fastnet.exceptions import ConnectionClosedError, ProtocolError

__all__ = ["BODY_CHUNKED", "BODY_LENGTH", "BODY_NONE", "BODY_UNTIL_CLOSE", "ResponseParser"]

BODY_NONE = 0
BODY_LENGTH = 1
BODY_CHUNKED = 2
BODY_UNTIL_CLOSE = 3

_MAX_INT64 = (1 << 63) - 1

_READY = 0
_LENGTH = 1
_CHUNKED = 2
_UNTIL_CLOSE = 3
_ERROR = 4

# chunked sub-states
_CH_SIZE = 0
_CH_DATA = 1
_CH_CRLF = 2
_CH_TRAILERS = 3

_LF = b"\n"
_BLOCK_END = re.compile(rb"\n\r?\n")
_HEX_PREFIX = re.compile(rb"[0-9A-Fa-f]+")
# Only used to find which line to quote when h11 rejects a block (h11 decides; this explains).
_HEADER_LINE = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+:[ \t]*(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?[ \t]*")


def _quote(data: bytes | bytearray) -> str:
    """Render an offending line for an error message: repr of its latin-1 text, at most 80 characters."""
    text = bytes(data).decode("latin-1")
    if len(text) > 80:
        return repr(text[:80]) + "..."
    return repr(text)


def _split_lines(block: bytes) -> list[bytes]:
    """Lines of a block ending in a blank line, terminators (``LF`` or ``CRLF``) removed."""
    lines = block.split(b"\n")[:-2]
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _ows_tokens(value: str) -> list[str]:
    return [part.strip(" \t").lower() for part in value.split(",")]


class ResponseParser:
    """Incremental HTTP/1.1 response parser: feed bytes, read heads and decoded bodies.

    Example::

        p = ResponseParser()
        p.feed(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
        status, reason, version, headers, mode, length, keep_alive, encoding = p.read_head()
        p.read_body()   # b"hi"
        p.read_body()   # None: complete, ready for the next response
    """

    __slots__ = (
        "_buf",
        "_eof",
        "_state",
        "_mode",
        "_remaining",
        "_chunk_state",
        "_chunk_left",
        "_conn",
        "_max_header",
        "_max_line",
        "trailers",
    )

    def __init__(self, max_header_size: int = 262144, max_line_size: int = 65536) -> None:
        if max_header_size <= 0 or max_line_size <= 0:
            raise ValueError("limits must be positive")
        self._max_header = max_header_size
        self._max_line = max_line_size
        self._buf = bytearray()
        self._eof = False
        self._state = _READY
        self._mode = BODY_NONE
        self._remaining = -1
        self._chunk_state = _CH_SIZE
        self._chunk_left = 0
        self._conn: h11.Connection | None = None
        self.trailers: list[tuple[str, str]] = []

    # -- buffer -----------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (copied). ``b""`` means the peer closed its side (EOF)."""
        if len(data) == 0:
            self._eof = True
        else:
            self._buf += data

    def take_buffered(self) -> bytes:
        """Return and forget the bytes received but not consumed (e.g. after a 101 or a CONNECT)."""
        out = bytes(self._buf)
        self._buf.clear()
        return out

    @property
    def body_remaining(self) -> int:
        """BODY_LENGTH: body bytes not yet returned by :meth:`read_body`; otherwise -1."""
        return self._remaining if self._mode == BODY_LENGTH else -1

    def skip_body_bytes(self, n: int) -> None:
        """Account for ``n`` body bytes the caller received straight from the socket (BODY_LENGTH only)."""
        if self._state != _LENGTH:
            raise RuntimeError("skip_body_bytes() needs a Content-Length body in progress")
        if self._buf:
            raise RuntimeError("skip_body_bytes() while body bytes are buffered; read_body() them first")
        if n < 0 or n > self._remaining:
            raise ValueError(f"cannot skip {n} bytes, {self._remaining} remain")
        self._remaining -= n

    # -- errors -----------------------------------------------------------------------------------

    def _fail(self, message: str) -> ProtocolError:
        self._state = _ERROR
        self._conn = None
        return ProtocolError(message)

    def _check_incomplete(self, what: str) -> None:
        buf = self._buf
        if len(buf) > self._max_header:
            raise self._fail(f"response {what} exceed {self._max_header} bytes")
        line_start = buf.rfind(b"\n") + 1
        if len(buf) - line_start > self._max_line + 1:
            raise self._fail(
                f"response {what} line longer than {self._max_line} bytes: {_quote(buf[line_start:])}"
            )

    def _check_lines(self, lines: list[bytes], what: str) -> None:
        for line in lines:
            if len(line) > self._max_line:
                raise self._fail(f"response {what} line longer than {self._max_line} bytes: {_quote(line)}")
            if line[:1] in (b" ", b"\t"):
                raise self._fail(f"Obsolete line folding is not supported: {_quote(line)}")

    def _explain_header_error(self, lines: list[bytes], error: h11.RemoteProtocolError) -> ProtocolError:
        """Turn h11's verdict on a block of header lines into our message quoting the offending line."""
        text = str(error)
        for line in lines:
            if not _HEADER_LINE.fullmatch(line):
                return self._fail(f"Invalid header line: {_quote(line)}")
        for line in lines:
            name = line.split(b":", 1)[0].lower()
            if name == b"content-length" and "Content-Length" in text:
                kind = "Conflicting" if "conflicting" in text else "Invalid"
                # quote the first line that is bad or differs from the first one
                first = None
                for other in lines:
                    if other.split(b":", 1)[0].lower() != b"content-length":
                        continue
                    pieces = {p.strip(b" \t") for p in other.split(b":", 1)[1].split(b",")}
                    if len(pieces) != 1 or first is not None and pieces != first:
                        return self._fail(f"Conflicting Content-Length: {_quote(other)}")
                    if not re.fullmatch(rb"[0-9]{1,20}", next(iter(pieces))):
                        return self._fail(f"Invalid Content-Length: {_quote(other)}")
                    first = pieces
                return self._fail(f"{kind} Content-Length: {_quote(line)}")
            if name == b"transfer-encoding" and "Transfer-Encoding" in text:
                kind = (
                    "Multiple Transfer-Encoding headers"
                    if "multiple" in text
                    else "Unsupported Transfer-Encoding"
                )
                return self._fail(f"{kind}: {_quote(line)}")
        return self._fail(f"Invalid response head ({text})")

    # -- head -------------------------------------------------------------------------------------

    def read_head(self, head_request: bool = False) -> tuple[Any, ...] | None:
        """Parse the next response head; ``None`` if more bytes are needed. See the module docs."""
        if self._state == _LENGTH and self._remaining == 0:
            self._state = _READY
        if self._state != _READY:
            if self._state == _ERROR:
                raise ProtocolError("the response parser failed earlier; the connection is unusable")
            raise RuntimeError("read_head() before the previous body was read to its end")
        buf = self._buf
        if buf and buf[0] < 0x21:
            raise self._fail(f"Unexpected status line: {_quote(buf.split(_LF, 1)[0])}")
        match = _BLOCK_END.search(buf)
        if match is None:
            self._check_incomplete("headers")
            if self._eof:
                self._state = _ERROR
                if not buf:
                    raise ConnectionClosedError("unexpected end of stream before the response head")
                raise ProtocolError(f"unexpected end of stream in the response head: {_quote(buf)}")
            return None
        end = match.end()
        if end > self._max_header:
            raise self._fail(f"response headers exceed {self._max_header} bytes")
        block = bytes(buf[:end])
        lines = _split_lines(block)
        status_line = lines[0]
        if len(status_line) > self._max_line:
            raise self._fail(
                f"response status line longer than {self._max_line} bytes: {_quote(status_line)}"
            )
        header_lines = lines[1:]
        self._check_lines(header_lines, "header")

        conn = self._conn
        if conn is None:
            conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=self._max_header)
            conn.send(
                h11.Request(
                    method="HEAD" if head_request else "GET",
                    target="/",
                    headers=[("Host", "x"), ("Connection", "upgrade"), ("Upgrade", "x")],
                )
            )
            conn.send(h11.EndOfMessage())
            self._conn = conn
        conn.receive_data(block)
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            text = str(exc)
            if "status line" in text or "status_code" in text:
                raise self._fail(f"Unexpected status line: {_quote(status_line)}") from None
            raise self._explain_header_error(header_lines, exc) from None
        if not isinstance(event, (h11.Response, h11.InformationalResponse)):  # pragma: no cover
            raise self._fail(f"Invalid response head: {_quote(status_line)}")
        del buf[:end]

        if event.http_version not in (b"1.0", b"1.1"):
            raise self._fail(f"Unexpected status line: {_quote(status_line)}")
        status = event.status_code
        headers: list[tuple[str, str]] = []
        content_length = -1
        chunked = False
        close = False
        keep_alive_token = False
        encoding = ""
        for line in header_lines:
            raw_name, _, raw_value = line.partition(b":")
            name = raw_name.decode("latin-1")
            value = raw_value.strip(b" \t").decode("latin-1")
            headers.append((name, value))
            lower = name.lower()
            if lower == "content-length":
                number = int(value.split(",", 1)[0].strip(" \t"))
                if number > _MAX_INT64:
                    raise self._fail(f"Content-Length too large: {_quote(line)}")
                content_length = number
            elif lower == "transfer-encoding":
                chunked = True
            elif lower == "connection":
                tokens = _ows_tokens(value)
                close = close or "close" in tokens
                keep_alive_token = keep_alive_token or "keep-alive" in tokens
            elif lower == "content-encoding":
                encoding = value.lower()
        if content_length >= 0 and chunked:
            raise self._fail("Response has both Content-Length and Transfer-Encoding")
        if status == 204 and content_length > 0:
            raise self._fail(f"HTTP 204 had non-zero Content-Length: {content_length}")

        http11 = event.http_version == b"1.1"
        keep_alive = not close and (http11 or keep_alive_token)
        self.trailers = []
        self._remaining = -1
        if status < 200:
            mode = BODY_NONE
            if status == 101:
                keep_alive = False
                self._conn = None
        elif head_request or status in (204, 304):
            mode = BODY_NONE
            self._conn = None
        elif chunked:
            mode = BODY_CHUNKED
            self._state = _CHUNKED
            self._chunk_state = _CH_SIZE
        elif content_length >= 0:
            mode = BODY_LENGTH
            self._remaining = content_length
            self._state = _LENGTH
            self._conn = None
        else:
            mode = BODY_UNTIL_CLOSE
            keep_alive = False
            self._state = _UNTIL_CLOSE
            self._conn = None
        self._mode = mode
        reason = bytes(event.reason).decode("latin-1")
        return (
            status,
            reason,
            "1.1" if http11 else "1.0",
            headers,
            mode,
            content_length,
            keep_alive,
            encoding,
        )

    # -- body -------------------------------------------------------------------------------------

    def read_body(self) -> bytes | None:
        """Decoded body bytes available now (``b""``: need more), or ``None`` once the body is complete."""
        state = self._state
        buf = self._buf
        if state == _LENGTH:
            if self._remaining == 0:
                self._state = _READY
                return None
            if not buf:
                if self._eof:
                    raise self._fail(f"unexpected end of stream: {self._remaining} body bytes missing")
                return b""
            n = min(len(buf), self._remaining)
            out = bytes(buf[:n])
            del buf[:n]
            self._remaining -= n
            return out
        if state == _READY:
            return None
        if state == _UNTIL_CLOSE:
            if not buf:
                if self._eof:
                    self._state = _READY
                    return None
                return b""
            out = bytes(buf)
            buf.clear()
            return out
        if state == _ERROR:
            raise ProtocolError("the response parser failed earlier; the connection is unusable")
        return self._read_chunked()

    def _h11(self, data: bytes) -> Any:
        conn = self._conn
        assert conn is not None
        conn.receive_data(data)
        try:
            return conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise self._fail(f"Invalid chunked body ({exc})") from None

    def _read_chunked(self) -> bytes | None:
        buf = self._buf
        out: list[bytes] = []
        done = False
        while True:
            sub = self._chunk_state
            if sub == _CH_DATA:
                if not buf:
                    break
                n = min(len(buf), self._chunk_left)
                event = self._h11(bytes(buf[:n]))
                del buf[:n]
                assert isinstance(event, h11.Data)
                out.append(bytes(event.data))
                self._chunk_left -= n
                if self._chunk_left == 0:
                    self._chunk_left = 2
                    self._chunk_state = _CH_CRLF
            elif sub == _CH_CRLF:
                if not buf:
                    break
                expected = b"\r\n"[2 - self._chunk_left :]
                piece = bytes(buf[: len(expected)])
                if piece != expected[: len(piece)]:
                    raise self._fail(f"Chunk data not followed by CRLF: {_quote(piece)}")
                self._h11(piece)  # h11 checks the same and returns NEED_DATA
                del buf[: len(piece)]
                self._chunk_left -= len(piece)
                if self._chunk_left == 0:
                    self._chunk_state = _CH_SIZE
            elif sub == _CH_SIZE:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > self._max_line + 1:
                        raise self._fail(f"chunk size line longer than {self._max_line} bytes: {_quote(buf)}")
                    break
                line = bytes(buf[:nl])
                if not line.endswith(b"\r"):
                    raise self._fail(f"Invalid chunk size line: {_quote(line)}")
                line = line[:-1]
                if len(line) > self._max_line:
                    raise self._fail(f"chunk size line longer than {self._max_line} bytes: {_quote(line)}")
                digits = _HEX_PREFIX.match(line)
                if digits is not None and len(digits.group()) <= 20 and int(digits.group(), 16) > _MAX_INT64:
                    raise self._fail(f"Chunk size too large: {_quote(line)}")
                conn = self._conn
                assert conn is not None
                conn.receive_data(bytes(buf[: nl + 1]))
                try:
                    event = conn.next_event()
                except h11.RemoteProtocolError:
                    raise self._fail(f"Invalid chunk size line: {_quote(line)}") from None
                del buf[: nl + 1]
                assert digits is not None
                size = int(digits.group(), 16)
                if size == 0:
                    assert event is h11.NEED_DATA
                    self._chunk_state = _CH_TRAILERS
                else:
                    self._chunk_left = size
                    self._chunk_state = _CH_DATA
            else:  # _CH_TRAILERS
                if not buf or buf == b"\r":
                    break
                if buf[:1] == b"\n" or buf[:2] == b"\r\n":
                    end = 1 if buf[:1] == b"\n" else 2
                    lines: list[bytes] = []
                else:
                    match = _BLOCK_END.search(buf)
                    if match is None:
                        self._check_incomplete("trailers")
                        break
                    end = match.end()
                    if end > self._max_header:
                        raise self._fail(f"response trailers exceed {self._max_header} bytes")
                    lines = _split_lines(bytes(buf[:end]))
                    self._check_lines(lines, "trailer")
                conn = self._conn
                assert conn is not None
                conn.receive_data(bytes(buf[:end]))
                try:
                    event = conn.next_event()
                except h11.RemoteProtocolError as exc:
                    raise self._explain_header_error(lines, exc) from None
                assert isinstance(event, h11.EndOfMessage)
                del buf[:end]
                trailers = []
                for line in lines:
                    raw_name, _, raw_value = line.partition(b":")
                    trailers.append((raw_name.decode("latin-1"), raw_value.strip(b" \t").decode("latin-1")))
                self.trailers = trailers
                done = True
                break
        if done:
            self._state = _READY
            self._conn = None
        if out:
            return out[0] if len(out) == 1 else b"".join(out)
        if done:
            return None
        if self._eof:
            raise self._fail("unexpected end of stream in a chunked body")
        return b""
