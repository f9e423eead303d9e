"""HTTP/1.1 response parser, pure-Python twin built on h11's grammar (the oracle for the compiled twin).

Theory of operation: received bytes are appended (copied) to one ``bytearray``; ``_pos`` is the offset
of the first unconsumed byte. Consuming only moves ``_pos``; :meth:`ResponseParser.feed` drops the
consumed prefix before appending, so the buffer never grows with consumed bytes and nothing is copied
per call on the hot path except the bytes handed out.

The grammar is h11's (``h11._abnf``; pinned in ``tests/_internal/http1/test_parser.py``), applied
without h11's connection state machine, which cost ~30 µs per response. Once the end of a head (the first
``LF [CR] LF``) is in the buffer, the whole head is decoded once (latin-1) and parsed in one go:

* the status line: one match of h11's ``status_line`` rule (plus ``\\r?\\n``), with a shortcut for the
  literal ``HTTP/1.1 200 OK`` line;
* the header lines: one ``findall`` over the header block of ``^field-name ":" OWS field-value OWS
  [CR]$``, where field-name is h11's ``field_name`` and the value uses an equivalent form of h11's
  ``field_value`` that the regex engine runs faster (same language; a test checks every byte value
  against h11's own compiled regex). If the number of matches differs from the number of lines, some
  line is bad and the slow path below finds it;
* the framing headers (Content-Length, Transfer-Encoding, Connection, Content-Encoding) are picked out
  of the header list by name length, then name. Anything unusual (a repeated Content-Length or
  Transfer-Encoding, a Content-Length list or long number, a Transfer-Encoding other than ``chunked``)
  goes to the slow path.

The slow path (also used for trailers and heads longer than ``max_line_size``) checks the lines in
h11's order (obs-fold unfolding, our line-length rule, then h11's ``header_field`` regex on each line,
then h11's Content-Length and Transfer-Encoding rules from ``h11._headers.normalize_and_validate``)
and raises the first error with the offending line quoted. Bodies are sliced out of the buffer:
Content-Length and until-close bodies by count, chunked bodies with h11's ``chunk_header`` regex
matched in place on each size line.

Header names and values are returned as received (h11 lowercases names, drops repeated Content-Length
headers and lowercases Transfer-Encoding; we keep what was received).

Stricter than h11 (also in the compiled twin; see ``DELIBERATE_DIFFERENCES`` in the test corpus):
HTTP versions other than 1.0/1.1, both Content-Length and Transfer-Encoding, a 204 with
Content-Length > 0, Content-Length or chunk sizes of 2**63 or more, a header block (or trailer block)
over ``max_header_size`` bytes, any line over ``max_line_size`` bytes.
Differs on purpose: an HTTP/1.0 response with ``Connection: keep-alive`` keeps the connection.

Line endings: ``CRLF`` and bare ``LF`` are both accepted in the head and in trailers (as h11 does; a lone
``CR`` inside a line is rejected). Chunk-size lines must end in ``CRLF`` and chunk data must be followed
by ``CRLF`` (as h11 requires).

Obsolete line folding (a header or trailer line starting with SP or HTAB) is unfolded as RFC 9112 §5.2
asks of a user agent and as h11 does: the fold becomes one SP in the previous field's value; the unfolded
line counts against ``max_line_size``, the received block against ``max_header_size``; a fold before the
first field line is a :class:`ProtocolError`. A fold sends a head to the slow path (its line matches no
field line).

EOF (``feed(b"")``): before any byte of a head → :class:`ConnectionClosedError`; inside a head or a
length/chunked body → :class:`ProtocolError` ("unexpected end of stream ..."); ends an until-close body.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: A response head: ``(status, reason, version, headers, body_mode, length, keep_alive, encoding)``.
    ResponseHead: TypeAlias = "tuple[int, str, str, list[tuple[str, str]], int, int, bool, str]"

# h11's private grammar (tested with h11 0.16; tests/_internal/http1/test_parser.py fails if these move).
from h11._abnf import OWS, field_name, header_field, status_line
from h11._headers import CONTENT_LENGTH_MAX_DIGITS
from h11._readers import chunk_header_re

from fastnet.exceptions import ConnectionClosedError, ProtocolError

__all__ = [
    "BODY_CHUNKED",
    "BODY_LENGTH",
    "BODY_NONE",
    "BODY_UNTIL_CLOSE",
    "PREALLOCATE",
    "ResponseParser",
    "receive_exact",
]

BODY_NONE = 0
BODY_LENGTH = 1
BODY_CHUNKED = 2
BODY_UNTIL_CLOSE = 3

_MAX_INT64 = (1 << 63) - 1

# parser states
_READY = 0  # between responses: read_head may be called, read_body returns None
_LENGTH = 1
_CH_SIZE = 2
_CH_DATA = 3
_CH_CRLF = 4
_TRAILERS = 5
_UNTIL_CLOSE = 6
_ERROR = 7

_V10 = "1.0"
_V11 = "1.1"
_EMPTY = ""

# Patterns run on latin-1 text; re.ASCII makes \s mean [ \t\n\r\f\v] exactly as in h11's bytes regexes.
_A = re.ASCII

# Block end: the first blank line (h11's ReceiveBuffer rule), searched in the raw buffer.
_BLOCK_END = re.compile(rb"\n\r?\n")

# status-line = HTTP-version SP status-code [SP reason-phrase], then the line end h11 strips.
_STATUS = re.compile(status_line + r"\r?\n", _A)
_STATUS_200 = "HTTP/1.1 200 OK\r\n"

# One header line of a block, terminators excluded (h11 strips one CR). h11's rule is
#   header-field = field-name ":" OWS field-value OWS
#   field-value  = [ field-vchar *( 1*( SP / HTAB ) field-vchar ) ]   ; field-vchar = [^\x00\s]
# The value form below matches the same strings and captures the same value (it spells [^\x00\s] and
# "field-vchar or SP/HTAB" as byte ranges, which the regex engine checks much faster than h11's nested
# repeat); tests compare it with h11's compiled header_field_re byte by byte.
_VCHAR = r"[\x01-\x08\x0e-\x1f\x21-\xff]"
_VCHAR_OR_WS = r"[\x01-\x09\x0e-\xff]"
_FIELD_LINES = re.compile(
    rf"^({field_name}):{OWS}((?:{_VCHAR}(?:{_VCHAR_OR_WS}*{_VCHAR})?)?){OWS}\r?\n", re.MULTILINE | _A
)
# h11's own rule, for the slow path (one line at a time).
_FIELD_LINE = re.compile(header_field, _A)
# Lengths of the framing header names (Connection, Content-Length, Content-Encoding, Transfer-Encoding).
_FRAMING_LENGTHS = frozenset((10, 14, 16, 17))
_DIGITS = re.compile(r"[0-9]*", _A)
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]*")


def _quote(data: bytes | bytearray | str) -> str:
    """Render an offending line for an error message: repr of its latin-1 text, at most 80 characters."""
    text = data if isinstance(data, str) else bytes(data).decode("latin-1")
    if len(text) > 80:
        return repr(text[:80]) + "..."
    return repr(text)


class _Fields:
    """What the slow path found in a header or trailer block."""

    __slots__ = ("headers", "length", "chunked", "close", "keep_alive", "encoding")

    def __init__(self) -> None:
        self.headers: list[tuple[str, str]] = []
        self.length = -1
        self.chunked = False
        self.close = False
        self.keep_alive = False
        self.encoding = _EMPTY


def _parse_fields(block: str, what: str, max_line: int) -> _Fields:
    """Parse header lines one by one (``block``: the lines, last terminator excluded); raise the first error.

    The checks come in h11's order, each over all lines before the next: obs-fold lines are joined to the
    line before them (h11's ``_obsolete_line_fold``; one before any field line is an error), then line
    length (our stricter rule, on the unfolded lines), h11's ``header_field``, then the framing rules of
    ``h11._headers.normalize_and_validate`` for Content-Length and Transfer-Encoding.
    """
    lines = [line[:-1] if line.endswith("\r") else line for line in block.split("\n")]
    if lines[0][:1] in (" ", "\t"):
        raise ProtocolError(f"Obsolete line folding before the first field line: {_quote(lines[0])}")
    if "\n " in block or "\n\t" in block:
        # obs-fold (RFC 9112 §5.2), unfolded as h11 does: the fold becomes one SP in the line before it
        unfolded: list[str] = []
        for line in lines:
            if line[:1] in (" ", "\t"):
                unfolded[-1] = unfolded[-1] + " " + line.lstrip(" \t")
            else:
                unfolded.append(line)
        lines = unfolded
    for line in lines:
        if len(line) > max_line:
            raise ProtocolError(f"response {what} line longer than {max_line} bytes: {_quote(line)}")
    matches = []
    for line in lines:
        field = _FIELD_LINE.fullmatch(line)
        if field is None:
            raise ProtocolError(f"Invalid header line: {_quote(line)}")
        matches.append(field)
    out = _Fields()
    headers = out.headers
    seen_length: str | None = None
    for match in matches:
        line = match.string
        name = match.group("field_name")
        value = match.group("field_value") or _EMPTY
        headers.append((name, value))
        lower = name.lower()
        if lower == "content-length":
            # Content-Length = 1*DIGIT; h11 also takes a list of identical values ("5, 5")
            pieces = [piece.strip(" \t") for piece in value.split(",")]
            first = pieces[0]
            for piece in pieces[1:]:
                if piece != first:
                    raise ProtocolError(f"Conflicting Content-Length: {_quote(line)}")
            if not first or len(first) > CONTENT_LENGTH_MAX_DIGITS:
                raise ProtocolError(f"Invalid Content-Length: {_quote(line)}")
            digits = _DIGITS.match(first).group()  # type: ignore[union-attr]  # [0-9]* always matches
            if digits and int(digits) > _MAX_INT64:
                raise ProtocolError(f"Content-Length too large: {_quote(line)}")
            if len(digits) != len(first):
                raise ProtocolError(f"Invalid Content-Length: {_quote(line)}")
            if seen_length is None:
                seen_length = first
                out.length = int(first)
            elif first != seen_length:
                raise ProtocolError(f"Conflicting Content-Length: {_quote(line)}")
        elif lower == "transfer-encoding":
            if out.chunked:
                raise ProtocolError(f"Multiple Transfer-Encoding headers: {_quote(line)}")
            if value.lower() != "chunked":
                raise ProtocolError(f"Unsupported Transfer-Encoding: {_quote(line)}")
            out.chunked = True
        elif lower == "connection":
            for token in value.split(","):
                token = token.strip(" \t").lower()
                if token == "close":
                    out.close = True
                elif token == "keep-alive":
                    out.keep_alive = True
        elif lower == "content-encoding":
            out.encoding = value
    return out


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
        "_pos",
        "_scan",
        "_eof",
        "_state",
        "_mode",
        "_remaining",
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
        self._pos = 0  # first unconsumed byte of _buf
        self._scan = 0  # resume offset (relative to _pos) of the block-end search
        self._eof = False
        self._state = _READY
        self._mode = BODY_NONE
        self._remaining = -1  # BODY_LENGTH: bytes left; chunked: bytes left in the chunk
        self.trailers: list[tuple[str, str]] = []

    # -- buffer -----------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (copied). ``b""`` means the peer closed its side (EOF)."""
        if not data:
            self._eof = True
            return
        buf = self._buf
        if self._pos:
            # drop what was consumed (at most the unconsumed tail moves; usually nothing is left)
            del buf[: self._pos]
            self._pos = 0
        buf += data

    def feed_from(self, buffer: bytearray, n: int) -> None:
        """Append the first ``n`` bytes of ``buffer`` (a connection's receive buffer); 0 means EOF."""
        if n > len(buffer):
            raise ValueError("n is larger than the buffer")
        self.feed(memoryview(buffer)[:n])

    def take_buffered(self) -> bytes:
        """Return and forget the bytes received but not consumed (e.g. after a 101 or a CONNECT)."""
        buf = self._buf
        pos = self._pos
        self._scan = 0
        if pos >= len(buf):
            if buf:
                buf.clear()
                self._pos = 0
            return b""
        out = bytes(buf[pos:])
        buf.clear()
        self._pos = 0
        return out

    @property
    def body_remaining(self) -> int:
        """BODY_LENGTH: body bytes not yet returned by :meth:`read_body`; otherwise -1."""
        return self._remaining if self._mode == BODY_LENGTH else -1

    def skip_body_bytes(self, n: int) -> None:
        """Account for ``n`` body bytes the caller received straight from the socket (BODY_LENGTH only)."""
        if self._state != _LENGTH:
            raise RuntimeError("skip_body_bytes() needs a Content-Length body in progress")
        if len(self._buf) > self._pos:
            raise RuntimeError("skip_body_bytes() while body bytes are buffered; read_body() them first")
        if n < 0 or n > self._remaining:
            raise ValueError(f"cannot skip {n} bytes, {self._remaining} remain")
        self._remaining -= n

    # -- errors -----------------------------------------------------------------------------------

    def _fail(self, message: str) -> ProtocolError:
        self._state = _ERROR
        return ProtocolError(message)

    def _find_block_end(self) -> int:
        """Absolute index just past the first blank line at or after ``_pos``, or -1 if incomplete."""
        buf = self._buf
        pos = self._pos
        block_end = _BLOCK_END.search(buf, pos + self._scan)
        if block_end is None:
            self._scan = max(0, len(buf) - pos - 2)
            return -1
        self._scan = 0
        return block_end.end()

    def _check_incomplete(self, what: str) -> None:
        buf = self._buf
        pos = self._pos
        if len(buf) - pos > self._max_header:
            raise self._fail(f"response {what} exceed {self._max_header} bytes")
        line_start = buf.rfind(b"\n", pos) + 1 or pos
        if len(buf) - line_start > self._max_line + 1:
            raise self._fail(
                f"response {what} line longer than {self._max_line} bytes: {_quote(buf[line_start:])}"
            )

    # -- head -------------------------------------------------------------------------------------

    def read_head(self, head_request: bool = False) -> ResponseHead | None:
        """Parse the next response head; ``None`` if more bytes are needed. See the module docs."""
        state = self._state
        if state != _READY:
            if state == _LENGTH and self._remaining == 0:
                self._state = _READY
            elif state == _ERROR:
                raise ProtocolError("the response parser failed earlier; the connection is unusable")
            else:
                raise RuntimeError("read_head() before the previous body was read to its end")
        buf = self._buf
        pos = self._pos
        if len(buf) <= pos:  # nothing buffered (the usual first call, before the response arrives)
            if self._eof:
                self._state = _ERROR
                raise ConnectionClosedError("unexpected end of stream before the response head")
            return None
        if buf[pos] < 0x21:
            nl = buf.find(b"\n", pos)
            raise self._fail(f"Unexpected status line: {_quote(buf[pos : nl if nl >= 0 else len(buf)])}")
        block_end = _BLOCK_END.search(buf, pos + self._scan)
        if block_end is None:
            self._scan = max(0, len(buf) - pos - 2)
            self._check_incomplete("headers")
            if self._eof:
                self._state = _ERROR
                raise ProtocolError(f"unexpected end of stream in the response head: {_quote(buf[pos:])}")
            return None
        self._scan = 0
        end = block_end.end()
        size = end - pos
        if size > self._max_header:
            raise self._fail(f"response headers exceed {self._max_header} bytes")
        text = buf[pos:end].decode("latin-1")
        long_lines = size > self._max_line

        # -- status line
        if not long_lines and text.startswith(_STATUS_200):
            status = 200
            reason = "OK"
            http11 = True
            start = 17
        else:
            first = text[: text.find("\n")]
            if first.endswith("\r"):
                first = first[:-1]
            if len(first) > self._max_line:
                raise self._fail(f"response status line longer than {self._max_line} bytes: {_quote(first)}")
            match = _STATUS.match(text)
            if match is None:
                raise self._fail(f"Unexpected status line: {_quote(first)}")
            version, code, reason = match.group("http_version", "status_code", "reason")
            status = int(code)
            # h11 accepts any HTTP/x.y; we take 1.0 and 1.1 only. h11 rejects 000-099 (not 1xx..9xx).
            if (version != _V11 and version != _V10) or status < 100:
                raise self._fail(f"Unexpected status line: {_quote(first)}")
            if reason is None:
                reason = _EMPTY
            http11 = version == _V11
            start = match.end()

        # -- header lines: text[start:stop] (stop: the LF ending the last header line)
        stop = size - 2 if text[-2] == "\n" else size - 3
        length = -1
        chunked = False
        close = False
        keep_alive_token = False
        encoding = _EMPTY
        if stop < start:
            headers: list[tuple[str, str]] = []
        else:
            headers = _FIELD_LINES.findall(text, start, stop + 1)
            slow = long_lines or len(headers) != text.count("\n", start, stop) + 1
            if not slow:
                # the framing headers of the (now validated) block, in order
                for name, value in headers:
                    kind = len(name)
                    if kind not in _FRAMING_LENGTHS:
                        continue
                    lower = name.lower()
                    if lower == "content-length":
                        if length >= 0 or not (value.isdigit() and value.isascii() and len(value) < 19):
                            slow = True  # repeated, a list, not digits, or maybe too large
                            break
                        length = int(value)
                    elif lower == "connection":
                        value = value.lower()
                        if value == "keep-alive":
                            keep_alive_token = True
                        elif value == "close":
                            close = True
                        else:
                            for token in value.split(","):
                                token = token.strip(" \t")
                                if token == "close":
                                    close = True
                                elif token == "keep-alive":
                                    keep_alive_token = True
                    elif lower == "transfer-encoding":
                        if chunked or value.lower() != "chunked":
                            slow = True
                            break
                        chunked = True
                    elif lower == "content-encoding":
                        encoding = value
            if slow:
                try:
                    fields = _parse_fields(text[start:stop], "header", self._max_line)
                except ProtocolError:
                    self._state = _ERROR
                    raise
                headers = fields.headers
                length = fields.length
                chunked = fields.chunked
                close = fields.close
                keep_alive_token = fields.keep_alive
                encoding = fields.encoding
        if length >= 0 and chunked:
            raise self._fail("Response has both Content-Length and Transfer-Encoding")
        if status == 204 and length > 0:
            raise self._fail(f"HTTP 204 had non-zero Content-Length: {length}")
        self._pos = end

        keep_alive = not close and (http11 or keep_alive_token)
        if self.trailers:
            self.trailers = []
        self._remaining = -1
        if status < 200:
            mode = BODY_NONE
            if status == 101:
                keep_alive = False
        elif head_request or status == 204 or status == 304:
            mode = BODY_NONE
        elif chunked:
            mode = BODY_CHUNKED
            self._state = _CH_SIZE
        elif length >= 0:
            mode = BODY_LENGTH
            self._remaining = length
            self._state = _LENGTH
        else:
            mode = BODY_UNTIL_CLOSE
            keep_alive = False
            self._state = _UNTIL_CLOSE
        self._mode = mode
        if encoding:
            encoding = encoding.lower()
        return (status, reason, _V11 if http11 else _V10, headers, mode, length, keep_alive, encoding)

    # -- body -------------------------------------------------------------------------------------

    def read_body(self) -> bytes | None:
        """Decoded body bytes available now (``b""``: need more), or ``None`` once the body is complete."""
        state = self._state
        if state == _LENGTH:
            remaining = self._remaining
            if remaining == 0:
                self._state = _READY
                return None
            buf = self._buf
            pos = self._pos
            avail = len(buf) - pos
            if avail <= 0:
                if self._eof:
                    raise self._fail(f"unexpected end of stream: {remaining} body bytes missing")
                return b""
            if avail <= remaining:
                out = bytes(buf[pos:]) if pos else bytes(buf)
                self._pos = len(buf)
                self._remaining = remaining - avail
            else:
                self._pos = end = pos + remaining
                out = bytes(buf[pos:end])
                self._remaining = 0
            return out
        if state == _READY:
            return None
        if state == _UNTIL_CLOSE:
            buf = self._buf
            pos = self._pos
            if len(buf) <= pos:
                if self._eof:
                    self._state = _READY
                    return None
                return b""
            out = bytes(buf[pos:]) if pos else bytes(buf)
            self._pos = len(buf)
            return out
        if state == _ERROR:
            raise ProtocolError("the response parser failed earlier; the connection is unusable")
        return self._read_chunked()

    def _read_chunked(self) -> bytes | None:
        buf = self._buf
        first: bytes | None = None
        pieces: list[bytes] | None = None
        done = False
        while True:
            pos = self._pos
            avail = len(buf) - pos
            state = self._state
            if state == _CH_DATA:
                if avail <= 0:
                    break
                n = min(avail, self._remaining)
                piece = bytes(buf[pos : pos + n])
                if first is None:
                    first = piece
                else:
                    if pieces is None:
                        pieces = [first]
                    pieces.append(piece)
                self._pos = pos + n
                self._remaining -= n
                if self._remaining == 0:
                    self._state = _CH_CRLF
            elif state == _CH_CRLF:
                # chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
                if avail >= 1 and buf[pos] != 13:
                    raise self._fail(f"Chunk data not followed by CRLF: {_quote(buf[pos : pos + 2])}")
                if avail >= 2 and buf[pos + 1] != 10:
                    raise self._fail(f"Chunk data not followed by CRLF: {_quote(buf[pos : pos + 2])}")
                if avail < 2:
                    break
                self._pos = pos + 2
                self._state = _CH_SIZE
            elif state == _CH_SIZE:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    if avail > self._max_line + 1:
                        raise self._fail(
                            f"chunk size line longer than {self._max_line} bytes: {_quote(buf[pos:])}"
                        )
                    break
                if nl == pos or buf[nl - 1] != 13:
                    raise self._fail(f"Invalid chunk size line: {_quote(buf[pos:nl])}")
                if nl - 1 - pos > self._max_line:
                    raise self._fail(
                        f"chunk size line longer than {self._max_line} bytes: {_quote(buf[pos : nl - 1])}"
                    )
                # h11: chunk-size = 1*20HEXDIG, then ";" anything, OWS, CRLF (matched in place)
                match = chunk_header_re.fullmatch(buf, pos, nl + 1)
                if match is None:
                    digits = _HEX_DIGITS.match(buf, pos).group()  # type: ignore[union-attr]
                    if digits and int(digits, 16) > _MAX_INT64:
                        raise self._fail(f"Chunk size too large: {_quote(buf[pos : nl - 1])}")
                    raise self._fail(f"Invalid chunk size line: {_quote(buf[pos : nl - 1])}")
                size = int(match.group("chunk_size"), 16)
                if size > _MAX_INT64:
                    raise self._fail(f"Chunk size too large: {_quote(buf[pos : nl - 1])}")
                self._pos = nl + 1
                if size == 0:
                    self._state = _TRAILERS
                    self._scan = 0
                else:
                    self._remaining = size
                    self._state = _CH_DATA
            else:  # _TRAILERS: trailer-section CRLF (h11: an empty line, or lines up to a blank line)
                if avail <= 0 or (avail == 1 and buf[pos] == 13):
                    break
                if buf[pos] == 10:
                    self._pos = pos + 1
                    done = True
                    break
                if buf[pos] == 13 and buf[pos + 1] == 10:
                    self._pos = pos + 2
                    done = True
                    break
                end = self._find_block_end()
                if end < 0:
                    self._check_incomplete("trailers")
                    break
                if end - pos > self._max_header:
                    raise self._fail(f"response trailers exceed {self._max_header} bytes")
                text = buf[pos:end].decode("latin-1")
                stop = len(text) - (2 if text[-2] == "\n" else 3)
                try:
                    self.trailers = _parse_fields(text[:stop], "trailer", self._max_line).headers
                except ProtocolError:
                    self._state = _ERROR
                    raise
                self._pos = end
                done = True
                break
        if done:
            self._state = _READY
            self._scan = 0
        if pieces is not None:
            return b"".join(pieces)
        if first is not None:
            return first
        if done:
            return None
        if self._eof:
            raise self._fail("unexpected end of stream in a chunked body")
        return b""


#: A body of up to this many bytes is allocated whole when its head arrives; a larger declared length
#: is allocated this much first and grown (doubling) as the bytes actually arrive.
PREALLOCATE = 4 << 20


def receive_exact(recv_into: Callable[[memoryview], int], head: bytes, total: int) -> tuple[bytes, int]:
    """Receive the rest of a ``total``-byte body, ``head`` of which is in hand, into one buffer.
    Returns ``(body, received)``; ``received < total`` means the peer closed early. Memory follows the
    bytes that arrive: at most ``PREALLOCATE`` bytes up front, then twice as much each time it is full."""
    have = len(head)
    if have > total:
        raise ValueError("head is longer than the body")
    size = total if total <= PREALLOCATE else max(PREALLOCATE, have)
    out = bytearray(size)
    out[:have] = head
    while have < total:
        if have == size:
            grow = total - size if total - size <= size else size
            out.extend(bytes(grow))
            size += grow
        view = memoryview(out)[have:]
        try:
            n = recv_into(view)
        finally:
            view.release()
        if n == 0:
            break
        have += n
    if have < size:
        del out[have:]
    return bytes(out), have
