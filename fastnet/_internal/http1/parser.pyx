# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""HTTP/1.1 response parser, compiled twin (C scanning over a private byte buffer).

Theory of operation: :meth:`ResponseParser.feed` appends bytes to one ``malloc`` buffer holding the
unconsumed bytes between ``_start`` and ``_end``. The buffer is compacted only when it must grow (or for
free when it empties), never per call. :meth:`read_head` looks for the end of the head with ``memchr``
(the first ``LF [CR] LF``), then parses every line eagerly with pointer loops and creates the ``str``
objects with ``PyUnicode_DecodeLatin1`` on slices; the framing headers are recognised during the same
pass. :meth:`read_body` decodes the body in place (length, chunked, until-close). The grammar and every
accept/reject decision mirror the pure twin (h11 plus the stricter checks listed in
``_parser_py``); the differential tests in ``tests/_internal/http1/test_parser.py`` hold the two together.

Line endings: ``CRLF`` and bare ``LF`` are both accepted in the head and in trailers (as h11 does; a lone
``CR`` inside a line is rejected). Chunk-size lines must end in ``CRLF`` and chunk data must be followed
by ``CRLF`` (as h11 requires).

Obsolete line folding (a header or trailer line starting with SP or HTAB) is unfolded as RFC 9112 §5.2
asks of a user agent and as h11 does: the fold becomes one SP in the previous field's value; the unfolded
line counts against ``max_line_size``, the received block against ``max_header_size``; a fold before the
first field line is a ``ProtocolError``.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.object cimport PyObject
from cpython.ref cimport Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeLatin1
from libc.string cimport memchr, memcpy, memmove, memcmp
from libc.stdlib cimport realloc, free
from libc.stdint cimport int64_t

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

cdef int64_t _MAX_INT64 = 9223372036854775807


cdef enum:
    S_READY = 0       # between responses: read_head may be called, read_body returns None
    S_LENGTH = 1
    S_CHUNK_SIZE = 2
    S_CHUNK_DATA = 3
    S_CHUNK_CRLF = 4
    S_TRAILERS = 5
    S_UNTIL_CLOSE = 6
    S_ERROR = 7

cdef str V10 = "1.0"
cdef str V11 = "1.1"
cdef str EMPTY = ""
cdef str OK = "OK"

# RFC 9110 tchar
cdef bint TOKEN[256]
# bytes never allowed in a header value or reason phrase: NUL LF VT FF CR (h11's [^\x00\s] with SP/HT)
cdef bint BADVAL[256]


cdef void _init_tables():
    cdef int i
    for i in range(256):
        TOKEN[i] = 0
        BADVAL[i] = 0
    for i in range(ord("0"), ord("9") + 1):
        TOKEN[i] = 1
    for i in range(ord("a"), ord("z") + 1):
        TOKEN[i] = 1
    for i in range(ord("A"), ord("Z") + 1):
        TOKEN[i] = 1
    for c in b"-!#$%&'*+.^_`|~":
        TOKEN[c] = 1
    for c in b"\x00\n\x0b\x0c\r":
        BADVAL[c] = 1


_init_tables()


def _quote(data) -> str:
    """Render an offending line for an error message: repr of its latin-1 text, at most 80 characters."""
    text = bytes(data).decode("latin-1")
    if len(text) > 80:
        return repr(text[:80]) + "..."
    return repr(text)


cdef inline bint _ieq(const char* p, Py_ssize_t n, const char* lower, Py_ssize_t m) noexcept:
    """Case-insensitive compare of a token (already validated) with a lowercase ASCII literal."""
    cdef Py_ssize_t i
    if n != m:
        return 0
    for i in range(n):
        if (<unsigned char>p[i] | 0x20) != <unsigned char>lower[i]:
            return 0
    return 1


cdef inline bint _is_ows(char c) noexcept:
    return c == b' ' or c == b'\t'


cdef inline void _clear(HeadInfo* info) noexcept:
    """What a header block has not shown yet: no Content-Length, Transfer-Encoding or Connection."""
    info.has_cl = 0
    info.cl_ptr = NULL
    info.cl_len = 0
    info.cl_value = -1
    info.has_te = 0
    info.conn_close = 0
    info.conn_keep_alive = 0


cdef class ResponseParser:
    """Incremental HTTP/1.1 response parser: feed bytes, read heads and decoded bodies.

    Example::

        p = ResponseParser()
        p.feed(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
        status, reason, version, headers, mode, length, keep_alive, encoding = p.read_head()
        p.read_body()   # b"hi"
        p.read_body()   # None: complete, ready for the next response
    """

    def __cinit__(self):
        self._buf = NULL
        self._cap = 0

    def __init__(self, Py_ssize_t max_header_size=262144, Py_ssize_t max_line_size=65536):
        if max_header_size <= 0 or max_line_size <= 0:
            raise ValueError("limits must be positive")
        self._max_header = max_header_size
        self._max_line = max_line_size
        self._start = 0
        self._end = 0
        self._scan = 0
        self._line = 0
        self._eof = 0
        self._state = S_READY
        self._mode = BODY_NONE
        self._remaining = -1
        self.trailers = []
        self._ce = EMPTY

    def __dealloc__(self):
        if self._buf != NULL:
            free(self._buf)
            self._buf = NULL

    # -- buffer ---------------------------------------------------------------------------------------

    cdef int _append(self, const char* data, Py_ssize_t n) except -1:
        cdef Py_ssize_t size = self._end - self._start
        cdef Py_ssize_t want
        cdef char* grown
        if self._start == self._end:
            self._start = 0
            self._end = 0
            size = 0
        if self._end + n > self._cap:
            if self._start > 0 and size + n <= self._cap:
                memmove(self._buf, self._buf + self._start, size)
            else:
                want = self._cap * 2
                if want < size + n:
                    want = size + n
                if want < 16384:
                    want = 16384
                if self._start > 0:
                    memmove(self._buf, self._buf + self._start, size)
                grown = <char*>realloc(self._buf, want)
                if grown == NULL:
                    raise MemoryError()
                self._buf = grown
                self._cap = want
            self._start = 0
            self._end = size
        memcpy(self._buf + self._end, data, n)
        self._end += n
        return 0

    cpdef feed(self, object data):
        """Append received bytes (copied). ``b""`` means the peer closed its side (EOF)."""
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len == 0:
                self._eof = 1
            else:
                self._append(<const char*>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cpdef feed_from(self, bytearray buffer, Py_ssize_t n):
        """Append the first ``n`` bytes of ``buffer`` (a connection's receive buffer), without a
        memoryview slice per read; ``n == 0`` means EOF."""
        if n == 0:
            self._eof = 1
        else:
            if n > len(buffer):
                raise ValueError("n is larger than the buffer")
            self._append(PyByteArray_AS_STRING(buffer), n)

    cpdef bytes take_buffered(self):
        """Return and forget the bytes received but not consumed (e.g. after a 101 or a CONNECT)."""
        out = PyBytes_FromStringAndSize(self._buf + self._start, self._end - self._start)
        self._start = 0
        self._end = 0
        self._scan = 0
        self._line = 0
        return out

    @property
    def body_remaining(self) -> int:
        """BODY_LENGTH: body bytes not yet returned by :meth:`read_body`; otherwise -1."""
        if self._mode == BODY_LENGTH:
            return self._remaining
        return -1

    cpdef skip_body_bytes(self, int64_t n):
        """Account for ``n`` body bytes the caller received straight from the socket (BODY_LENGTH only)."""
        if self._state != S_LENGTH:
            raise RuntimeError("skip_body_bytes() needs a Content-Length body in progress")
        if self._end != self._start:
            raise RuntimeError("skip_body_bytes() while body bytes are buffered; read_body() them first")
        if n < 0 or n > self._remaining:
            raise ValueError(f"cannot skip {n} bytes, {self._remaining} remain")
        self._remaining -= n

    # -- errors ---------------------------------------------------------------------------------------

    cdef object _fail(self, str message):
        self._state = S_ERROR
        return ProtocolError(message)

    cdef object _quote_at(self, const char* p, Py_ssize_t n):
        return _quote(PyBytes_FromStringAndSize(p, n))

    # -- head -----------------------------------------------------------------------------------------

    cdef Py_ssize_t _find_block_end(self) except -2:
        """Relative index just past the first ``LF [CR] LF`` at or after ``_scan``, or -1 if incomplete."""
        cdef const char* base = self._buf + self._start
        cdef Py_ssize_t avail = self._end - self._start
        cdef Py_ssize_t i = self._scan
        cdef const char* hit
        while i < avail:
            hit = <const char*>memchr(base + i, b'\n', avail - i)
            if hit == NULL:
                break
            i = hit - base
            self._line = i + 1
            if i + 1 >= avail:
                self._scan = i
                return -1
            if base[i + 1] == b'\n':
                return i + 2
            if base[i + 1] == b'\r':
                if i + 2 >= avail:
                    self._scan = i
                    return -1
                if base[i + 2] == b'\n':
                    return i + 3
            i += 1
        self._scan = avail
        return -1

    cdef int _check_incomplete(self, str what) except -1:
        cdef Py_ssize_t avail = self._end - self._start
        if avail > self._max_header:
            raise self._fail(f"response {what} exceed {self._max_header} bytes")
        if avail - self._line > self._max_line + 1:
            raise self._fail(
                f"response {what} line longer than {self._max_line} bytes: "
                + self._quote_at(self._buf + self._start + self._line, avail - self._line)
            )
        return 0

    cdef int _header_line(self, const char* p, Py_ssize_t n, list out, HeadInfo* info) except -1:
        """Validate one header line ``p[:n]`` (terminators removed), append (name, value), note framing."""
        cdef const char* colon
        cdef Py_ssize_t nlen, i, vs, ve, a, b, first_len
        cdef const char* first
        cdef int64_t number
        cdef unsigned char c
        if n > self._max_line:
            raise self._fail(f"response header line longer than {self._max_line} bytes: "
                             + self._quote_at(p, n))
        colon = <const char*>memchr(p, b':', n)
        if colon == NULL:
            raise self._fail("Invalid header line: " + self._quote_at(p, n))
        nlen = colon - p
        if nlen == 0:
            raise self._fail("Invalid header line: " + self._quote_at(p, n))
        for i in range(nlen):
            if not TOKEN[<unsigned char>p[i]]:
                raise self._fail("Invalid header line: " + self._quote_at(p, n))
        vs = nlen + 1
        ve = n
        while vs < ve and _is_ows(p[vs]):
            vs += 1
        while ve > vs and _is_ows(p[ve - 1]):
            ve -= 1
        for i in range(vs, ve):
            if BADVAL[<unsigned char>p[i]]:
                raise self._fail("Invalid header line: " + self._quote_at(p, n))
        name = PyUnicode_DecodeLatin1(p, nlen, NULL)
        value = PyUnicode_DecodeLatin1(p + vs, ve - vs, NULL)
        out.append((name, value))
        c = <unsigned char>p[0] | 0x20
        if c == b'c':
            if _ieq(p, nlen, b"content-length", 14):
                # h11's rule: comma-separated pieces (stripped) must all be identical, all digits, at
                # most 20 of them, and identical to any earlier Content-Length.
                first = NULL
                first_len = 0
                a = vs
                while True:
                    b = a
                    while b < ve and p[b] != b',':
                        b += 1
                    i = b
                    while a < i and _is_ows(p[a]):
                        a += 1
                    while i > a and _is_ows(p[i - 1]):
                        i -= 1
                    if first == NULL:
                        first = p + a
                        first_len = i - a
                    elif i - a != first_len or memcmp(first, p + a, first_len) != 0:
                        raise self._fail("Conflicting Content-Length: " + self._quote_at(p, n))
                    if b >= ve:
                        break
                    a = b + 1
                if first_len == 0 or first_len > 20:
                    raise self._fail("Invalid Content-Length: " + self._quote_at(p, n))
                number = 0
                for i in range(first_len):
                    c = <unsigned char>first[i]
                    if c < b'0' or c > b'9':
                        raise self._fail("Invalid Content-Length: " + self._quote_at(p, n))
                    if number > (_MAX_INT64 - (c - 48)) // 10:
                        raise self._fail("Content-Length too large: " + self._quote_at(p, n))
                    number = number * 10 + (c - 48)
                if info.has_cl:
                    if first_len != info.cl_len or memcmp(first, info.cl_ptr, first_len) != 0:
                        raise self._fail("Conflicting Content-Length: " + self._quote_at(p, n))
                else:
                    info.has_cl = 1
                    info.cl_ptr = first
                    info.cl_len = first_len
                    info.cl_value = number
            elif _ieq(p, nlen, b"connection", 10):
                a = vs
                while a < ve:
                    b = a
                    while b < ve and p[b] != b',':
                        b += 1
                    i = b
                    while a < i and _is_ows(p[a]):
                        a += 1
                    while i > a and _is_ows(p[i - 1]):
                        i -= 1
                    if _ieq(p + a, i - a, b"close", 5):
                        info.conn_close = 1
                    elif _ieq(p + a, i - a, b"keep-alive", 10):
                        info.conn_keep_alive = 1
                    a = b + 1
            elif _ieq(p, nlen, b"content-encoding", 16):
                self._ce = value
        elif c == b't' and _ieq(p, nlen, b"transfer-encoding", 17):
            if info.has_te:
                raise self._fail("Multiple Transfer-Encoding headers: " + self._quote_at(p, n))
            info.has_te = 1
            if not _ieq(p + vs, ve - vs, b"chunked", 7):
                raise self._fail("Unsupported Transfer-Encoding: " + self._quote_at(p, n))
        return 0

    cdef list _header_block(self, const char* p, Py_ssize_t n, HeadInfo* info):
        """Parse the header lines of ``p[:n]`` (the block after the first line, blank line excluded).

        ``p[n]`` must be readable (it is the LF that ended the last line). A line followed by one that
        starts with SP or HTAB is the start of an obs-fold (RFC 9112 §5.2): the whole block is then parsed
        again from an unfolded copy (:meth:`_header_block_unfolded`) before that line is looked at, so a
        block without a fold pays one byte test per line.
        """
        cdef list headers = []
        cdef const char* block = p
        cdef const char* end = p + n
        cdef const char* nl
        cdef Py_ssize_t ln
        if n > 0 and (p[0] == b' ' or p[0] == b'\t'):
            nl = <const char*>memchr(p, b'\n', n)
            ln = (nl - p) if nl != NULL else n
            if ln > 0 and p[ln - 1] == b'\r':
                ln -= 1
            raise self._fail("Obsolete line folding before the first field line: " + self._quote_at(p, ln))
        while p < end:
            nl = <const char*>memchr(p, b'\n', end - p)
            if nl == NULL:
                nl = end
            elif nl[1] == b' ' or nl[1] == b'\t':
                return self._header_block_unfolded(block, n, info)
            ln = nl - p
            if ln > 0 and p[ln - 1] == b'\r':
                ln -= 1
            self._header_line(p, ln, headers, info)
            p = nl + 1
        return headers

    cdef list _header_block_unfolded(self, const char* p, Py_ssize_t n, HeadInfo* info):
        """The block ``p[:n]`` (its first line is not a fold) parsed as if unfolded, from the start.

        As h11 (and RFC 9112 §5.2): each fold line's terminator and leading SP/HTAB become one SP, appended
        to the line before it. The unfolded field lines then go through the ordinary checks,
        ``max_line_size`` included (the block limit was checked on the received bytes). What the first
        pass saw before the fold is forgotten.
        """
        cdef const char* end = p + n
        cdef const char* nl
        cdef Py_ssize_t ln
        cdef bytearray out = bytearray()
        while p < end:
            nl = <const char*>memchr(p, b'\n', end - p)
            if nl == NULL:
                nl = end
            ln = nl - p
            if ln > 0 and p[ln - 1] == b'\r':
                ln -= 1
            if p[0] == b' ' or p[0] == b'\t':
                while ln > 0 and (p[0] == b' ' or p[0] == b'\t'):
                    p += 1
                    ln -= 1
                del out[len(out) - 2:]
                out += b" "  # the previous line's terminator and this one's indent become one SP
            out += PyBytes_FromStringAndSize(p, ln)
            out += b"\r\n"
            p = nl + 1
        # Every line of ``out`` ends in CRLF and none starts with SP/HTAB; the last LF is passed as the
        # readable p[n]. ``out`` outlives the call, so info.cl_ptr may point into it meanwhile.
        _clear(info)
        self._ce = EMPTY
        return self._header_block(PyByteArray_AS_STRING(out), len(out) - 1, info)

    cpdef object read_head(self, bint head_request=False):
        """Parse the next response head; ``None`` if more bytes are needed. See the module docs."""
        cdef Py_ssize_t avail, end, ln, i
        cdef const char* base
        cdef const char* nl
        cdef int status, mode
        cdef bint http11, keep_alive
        cdef HeadInfo info
        cdef str encoding = EMPTY
        cdef str reason
        if self._state == S_LENGTH and self._remaining == 0:
            self._state = S_READY
        if self._state != S_READY:
            if self._state == S_ERROR:
                raise ProtocolError("the response parser failed earlier; the connection is unusable")
            raise RuntimeError("read_head() before the previous body was read to its end")
        avail = self._end - self._start
        base = self._buf + self._start
        if avail > 0 and <unsigned char>base[0] < 0x21:
            nl = <const char*>memchr(base, b'\n', avail)
            ln = (nl - base) if nl != NULL else avail
            raise self._fail("Unexpected status line: " + self._quote_at(base, ln))
        end = self._find_block_end()
        if end < 0:
            self._check_incomplete("headers")
            if self._eof:
                self._state = S_ERROR
                if avail == 0:
                    raise ConnectionClosedError("unexpected end of stream before the response head")
                raise ProtocolError("unexpected end of stream in the response head: "
                                    + self._quote_at(base, avail))
            return None
        if end > self._max_header:
            raise self._fail(f"response headers exceed {self._max_header} bytes")
        self._scan = 0
        self._line = 0
        # status line: HTTP/1.x SP 3DIGIT [SP reason]
        nl = <const char*>memchr(base, b'\n', end)
        ln = nl - base
        if ln > 0 and base[ln - 1] == b'\r':
            ln -= 1
        if (ln > self._max_line or ln < 12 or memcmp(base, b"HTTP/1.", 7) != 0
                or (base[7] != b'0' and base[7] != b'1') or base[8] != b' '
                or base[9] < b'0' or base[9] > b'9' or base[10] < b'0' or base[10] > b'9'
                or base[11] < b'0' or base[11] > b'9' or base[9] == b'0' or (ln > 12 and base[12] != b' ')):
            if ln > self._max_line:
                raise self._fail(f"response status line longer than {self._max_line} bytes: "
                                 + self._quote_at(base, ln))
            raise self._fail("Unexpected status line: " + self._quote_at(base, ln))
        for i in range(13, ln):
            if BADVAL[<unsigned char>base[i]]:
                raise self._fail("Unexpected status line: " + self._quote_at(base, ln))
        http11 = base[7] == b'1'
        status = (base[9] - 48) * 100 + (base[10] - 48) * 10 + (base[11] - 48)
        if ln <= 13:
            reason = EMPTY
        elif ln == 15 and base[13] == b'O' and base[14] == b'K':
            reason = OK
        else:
            reason = PyUnicode_DecodeLatin1(base + 13, ln - 13, NULL)
        # header block: from after the status line to before the blank line
        _clear(&info)
        # strip the terminating blank line ("\n" or "\r\n") and the LF ending the last header line
        i = nl - base + 1                 # first header byte
        ln = end - i                      # header bytes incl. last LF and blank line
        if ln > 0 and base[end - 2] == b'\r':
            ln -= 2
        else:
            ln -= 1
        self._ce = EMPTY
        headers = self._header_block(base + i, ln - 1 if ln > 0 else 0, &info)
        if info.has_cl and info.has_te:
            raise self._fail("Response has both Content-Length and Transfer-Encoding")
        if status == 204 and info.has_cl and info.cl_value > 0:
            raise self._fail(f"HTTP 204 had non-zero Content-Length: {info.cl_value}")
        self._start += end
        keep_alive = not info.conn_close and (http11 or info.conn_keep_alive)
        self.trailers = []
        self._remaining = -1
        if status < 200:
            mode = BODY_NONE
            if status == 101:
                keep_alive = 0
        elif head_request or status == 204 or status == 304:
            mode = BODY_NONE
        elif info.has_te:
            mode = BODY_CHUNKED
            self._state = S_CHUNK_SIZE
        elif info.has_cl:
            mode = BODY_LENGTH
            self._remaining = info.cl_value
            self._state = S_LENGTH
        else:
            mode = BODY_UNTIL_CLOSE
            keep_alive = 0
            self._state = S_UNTIL_CLOSE
        self._mode = mode
        encoding = self._ce
        if encoding is not EMPTY:
            encoding = encoding.lower()
            self._ce = EMPTY
        return (status, reason, V11 if http11 else V10, headers, mode,
                info.cl_value if info.has_cl else -1, keep_alive, encoding)

    # -- body -----------------------------------------------------------------------------------------

    cpdef object read_body(self):
        """Decoded body bytes available now (``b""``: need more), or ``None`` once the body is complete."""
        cdef Py_ssize_t avail = self._end - self._start
        cdef Py_ssize_t n
        cdef int state = self._state
        if state == S_LENGTH:
            if self._remaining == 0:
                self._state = S_READY
                return None
            if avail == 0:
                if self._eof:
                    raise self._fail(f"unexpected end of stream: {self._remaining} body bytes missing")
                return b""
            n = avail if avail < self._remaining else <Py_ssize_t>self._remaining
            out = PyBytes_FromStringAndSize(self._buf + self._start, n)
            self._start += n
            self._remaining -= n
            return out
        if state == S_READY:
            return None
        if state == S_UNTIL_CLOSE:
            if avail == 0:
                if self._eof:
                    self._state = S_READY
                    return None
                return b""
            out = PyBytes_FromStringAndSize(self._buf + self._start, avail)
            self._start = self._end
            return out
        if state == S_ERROR:
            raise ProtocolError("the response parser failed earlier; the connection is unusable")
        return self._read_chunked()

    cdef object _read_chunked(self):
        cdef list pieces = None
        cdef object piece
        cdef object first = None
        cdef Py_ssize_t avail, n, ln, k
        cdef const char* base
        cdef const char* nl
        cdef int64_t size
        cdef int digits, d
        cdef unsigned char c
        cdef bint done = 0
        while True:
            avail = self._end - self._start
            base = self._buf + self._start
            if self._state == S_CHUNK_DATA:
                if avail == 0:
                    break
                n = avail if avail < self._remaining else <Py_ssize_t>self._remaining
                piece = PyBytes_FromStringAndSize(base, n)
                if first is None:
                    first = piece
                else:
                    if pieces is None:
                        pieces = [first]
                    pieces.append(piece)
                self._start += n
                self._remaining -= n
                if self._remaining == 0:
                    self._state = S_CHUNK_CRLF
            elif self._state == S_CHUNK_CRLF:
                if avail >= 1 and base[0] != b'\r':
                    raise self._fail(
                        "Chunk data not followed by CRLF: " + self._quote_at(base, min(avail, 2))
                    )
                if avail >= 2 and base[1] != b'\n':
                    raise self._fail("Chunk data not followed by CRLF: " + self._quote_at(base, 2))
                if avail < 2:
                    break
                self._start += 2
                self._state = S_CHUNK_SIZE
            elif self._state == S_CHUNK_SIZE:
                nl = <const char*>memchr(base, b'\n', avail)
                if nl == NULL:
                    if avail > self._max_line + 1:
                        raise self._fail(f"chunk size line longer than {self._max_line} bytes: "
                                         + self._quote_at(base, avail))
                    break
                ln = nl - base
                if ln == 0 or base[ln - 1] != b'\r':
                    raise self._fail("Invalid chunk size line: " + self._quote_at(base, ln))
                ln -= 1
                if ln > self._max_line:
                    raise self._fail(f"chunk size line longer than {self._max_line} bytes: "
                                     + self._quote_at(base, ln))
                size = 0
                digits = 0
                while digits < ln:
                    c = <unsigned char>base[digits]
                    if b'0' <= c <= b'9':
                        d = c - 48
                    elif b'a' <= (c | 0x20) <= b'f':
                        d = (c | 0x20) - 87
                    else:
                        break
                    if size > (_MAX_INT64 >> 4):
                        raise self._fail("Chunk size too large: " + self._quote_at(base, ln))
                    size = (size << 4) | d
                    digits += 1
                if digits == 0 or digits > 20:
                    raise self._fail("Invalid chunk size line: " + self._quote_at(base, ln))
                if digits < ln and base[digits] != b';':
                    for k in range(digits, ln):
                        if not _is_ows(base[k]):
                            raise self._fail("Invalid chunk size line: " + self._quote_at(base, ln))
                self._start += ln + 2
                if size == 0:
                    self._state = S_TRAILERS
                    self._scan = 0
                    self._line = 0
                else:
                    self._remaining = size
                    self._state = S_CHUNK_DATA
            else:  # S_TRAILERS
                if avail == 0 or (avail == 1 and base[0] == b'\r'):
                    break
                if base[0] == b'\n':
                    self._start += 1
                    done = 1
                    break
                if base[0] == b'\r' and base[1] == b'\n':
                    self._start += 2
                    done = 1
                    break
                n = self._find_block_end()
                if n < 0:
                    self._check_incomplete("trailers")
                    break
                if n > self._max_header:
                    raise self._fail(f"response trailers exceed {self._max_header} bytes")
                self._trailers(base, n)
                self._start += n
                done = 1
                break
        if done:
            self._state = S_READY
            self._scan = 0
            self._line = 0
        if pieces is not None:
            return b"".join(pieces)
        if first is not None:
            return first
        if done:
            return None
        if self._eof:
            raise self._fail("unexpected end of stream in a chunked body")
        return b""

    cdef int _trailers(self, const char* base, Py_ssize_t end) except -1:
        cdef HeadInfo info
        cdef Py_ssize_t ln = end
        _clear(&info)
        if base[end - 2] == b'\r':
            ln -= 2
        else:
            ln -= 1
        self.trailers = self._header_block(base, ln - 1, &info)
        self._ce = EMPTY
        return 0


cdef extern from "Python.h":
    # the raw forms, so the body being received is one owned reference that _PyBytes_Resize may move
    PyObject* _bytes_new "PyBytes_FromStringAndSize"(const char* data, Py_ssize_t size) except NULL
    char* _bytes_data "PyBytes_AS_STRING"(PyObject* obj)
    int _PyBytes_Resize(PyObject** obj, Py_ssize_t size) except -1


#: A body of up to this many bytes is allocated whole when its head arrives; a larger declared length
#: is allocated this much first and grown (doubling) as the bytes actually arrive.
PREALLOCATE = 4 << 20
cdef Py_ssize_t _PREALLOCATE = PREALLOCATE


def receive_exact(recv_into, bytes head, Py_ssize_t total):
    """Receive a body of ``total`` bytes, ``head`` of which are already in hand, straight into the
    ``bytes`` object that is returned (no copy after the last ``recv``: this is what lets a big download
    run at the raw socket's speed). Returns ``(body, received)``; ``received < total`` means EOF.

    Memory follows the bytes that arrive, not the length a peer declares: at most ``PREALLOCATE`` bytes
    (or the whole body, if smaller) up front, then twice as much each time it is full.

    The bytes object is written before anyone else can see it, which is the one time that is safe.
    """
    cdef Py_ssize_t have = len(head)
    cdef Py_ssize_t n
    cdef Py_ssize_t size
    cdef PyObject* out = NULL
    if have > total:
        raise ValueError("head is longer than the body")
    size = total if total <= _PREALLOCATE else max(_PREALLOCATE, have)
    out = _bytes_new(NULL, size)
    try:
        memcpy(_bytes_data(out), <const char*>head, have)
        while have < total:
            if have == size:
                size = total if total - size <= size else size * 2
                _PyBytes_Resize(&out, size)
            view = PyMemoryView_FromMemory(_bytes_data(out) + have, size - have, 0x200)  # PyBUF_WRITE
            try:
                n = recv_into(view)
            finally:
                view.release()
            if n == 0:
                break
            have += n
        if have < size:
            _PyBytes_Resize(&out, have)
        result = <bytes>out
    finally:
        Py_XDECREF(out)
    return result, have
