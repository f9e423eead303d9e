"""``Response``: status, headers and a body that streams from its connection until it is read.

Compiled in place, typed by its ``.pxd``, in the compiled build. A response read off the network holds a
``ResponseBodySource``, the interface the HTTP/1.1 exchange implements one layer down: ``read_all``,
``read_chunk`` and ``close_body``. Defining the interface here is what lets the value type stream a body
without knowing about sockets or pools. Once the body is read (or the response closed), the source is dropped
and the connection is back with its pool.
"""

from __future__ import annotations

import codecs
import datetime
import inspect
import json as _json
import re
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from fastnet._content import charset_of, decode_guessing, guess_encoding, parse_links
from fastnet.challenge import Challenge, parse_challenges
from fastnet.cookies import parse_set_cookie
from fastnet.exceptions import BodyTooLargeError, HTTPStatusError
from fastnet.headers import Headers, HeadersLike, as_headers

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator
    from typing import Protocol

    from typing_extensions import Buffer

    from fastnet.request import Request
    from fastnet.route import Route
    from fastnet.timings import Timings
    from fastnet.url import URL

    class _Writer(Protocol):
        """What ``write_to`` writes to: ``write(bytes-like)`` (an ``awrite_to`` target's may be awaitable)."""

        def write(self, data: memoryview, /) -> object: ...


__all__ = ["STATUS_REASONS", "Response", "ResponseBodySource", "make_response"]

STATUS_REASONS = {
    100: "Continue",
    101: "Switching Protocols",
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    206: "Partial Content",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    304: "Not Modified",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    407: "Proxy Authentication Required",
    408: "Request Timeout",
    409: "Conflict",
    410: "Gone",
    413: "Content Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class ResponseBodySource:
    """Where a streamed response body comes from; the HTTP/1.1 exchanges are the implementations.

    ``read_chunk()`` returns the next decoded piece (never empty) or None at the end; ``read_all()`` the
    rest of the body; ``close_body()`` gives it up (drained briefly so the connection can be reused);
    ``abandon()`` is for a response that was garbage-collected unread (the connection is closed, from a
    finalizer: no lock, no event). ``done`` turns True once the body ended or was given up.
    ``aread_chunk()``, ``aread_all()`` and ``aclose_body()`` are the same for a body that streams from the
    asyncio client. A blocking source implements the first three, an asyncio one the last three (and a
    ``close_body`` that closes the connection without waiting); the others say which to call instead.
    """

    __slots__ = ("done",)
    done: bool

    def read_all(self) -> bytes:
        raise RuntimeError(_ASYNC_BODY)

    def read_chunk(self) -> bytes | None:
        raise RuntimeError(_ASYNC_BODY)

    def close_body(self) -> None:
        raise NotImplementedError

    def abandon(self) -> None:
        raise NotImplementedError

    async def aread_all(self) -> bytes:
        raise RuntimeError(_BLOCKING_BODY)

    async def aread_chunk(self) -> bytes | None:
        raise RuntimeError(_BLOCKING_BODY)

    async def aclose_body(self) -> None:
        self.close_body()

    def readinto(self, buffer: memoryview) -> int:
        raise RuntimeError(_ASYNC_BODY)

    async def areadinto(self, buffer: memoryview) -> int:
        raise RuntimeError(_BLOCKING_BODY)

    def body_limit(self) -> int:
        """The call's ``max_body_size`` (0: no limit): ``iter_lines()`` holds no longer a line."""
        return 0


_ASYNC_BODY = (
    "this response's body streams from an asyncio client: read it with await response.aread() "
    "or async for ... in response.aiter_bytes()"
)
_BLOCKING_BODY = (
    "this response's body streams from a blocking client: read it with response.read() "
    "or for ... in response.iter_bytes()"
)


class Response:
    """An HTTP response. The body streams from the connection unless it was already read.

    >>> r = client.get(url)
    >>> r.status_code, r.headers["content-type"], r.text
    >>> with client.stream("GET", url) as r:
    ...     for chunk in r.iter_bytes(): ...

    Interceptors may build one without the network: ``Response(200, headers=..., content=b"...",
    request=chain.request)``.
    """

    __slots__ = (
        "status_code",
        "reason",
        "headers",
        "request",
        "protocol",
        "prior_response",
        "_content",
        "_source",
        "_unreadable",
        "_closed",
        "network_response",
        "route",
        "timings",
        "_encoding",
        "__weakref__",
    )
    status_code: int
    reason: str
    headers: Headers
    request: Request | None
    protocol: str
    prior_response: Response | None
    _content: bytes
    _source: ResponseBodySource | None  # None once the body is read, closed, or was never streamed
    _unreadable: bool  # a prior response's body, closed by the follow-up that replaced it
    _closed: bool
    network_response: Response | None  # the response as received, when the Bridge rewrote it (gzip)
    route: Route | None
    #: How long each phase took (``fastnet.Timings``); None for a response that did not come off the network.
    timings: Timings | None
    _encoding: str | None  # set by ``response.encoding = ...``

    def __init__(
        self,
        status_code: int,
        headers: HeadersLike | None = None,
        content: bytes | str | None = b"",
        request: Request | None = None,
        reason: str | None = None,
        protocol: str = "HTTP/1.1",
    ) -> None:
        if not isinstance(status_code, int) or not 100 <= status_code <= 999:
            raise ValueError(f"status_code must be an int in 100-999, not {status_code!r}")
        self.status_code = status_code
        self.reason = STATUS_REASONS.get(status_code, "") if reason is None else _plain_str(reason, "reason")
        self.headers = as_headers(headers)
        if isinstance(content, str):
            content = content.encode("utf-8")
        self._content = bytes(content) if content is not None else b""
        self.request = request
        self.protocol = _plain_str(protocol, "protocol")
        self.prior_response = None
        self._source = None
        self._unreadable = False
        self._closed = False
        self.network_response = None
        self.route = None
        self.timings = None
        self._encoding = None

    # -- metadata -------------------------------------------------------------------------------

    @property
    def url(self) -> URL | None:
        return self.request.url if self.request is not None else None

    @property
    def history(self) -> list[Response]:
        """Earlier responses of this call (redirects, auth challenges), oldest first."""
        out: list[Response] = []
        prior = self.prior_response
        while prior is not None:
            out.append(prior)
            prior = prior.prior_response
        out.reverse()
        return out

    @property
    def is_success(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status_code < 300

    @property
    def ok(self) -> bool:
        """Not a 4xx or 5xx status (requests' ``ok``: what ``raise_for_status()`` lets through)."""
        return self.status_code < 400

    @property
    def is_error(self) -> bool:
        """A 4xx or 5xx status."""
        return self.status_code >= 400

    @property
    def is_redirect(self) -> bool:
        """A redirect fastnet would follow: 300, 301, 302, 303, 307 or 308 with a ``Location``."""
        return self.status_code in (300, 301, 302, 303, 307, 308) and "location" in self.headers

    @property
    def reason_phrase(self) -> str:
        """``reason`` (httpx's name)."""
        return self.reason

    @property
    def http_version(self) -> str:
        """``protocol`` (httpx's name): ``"HTTP/1.1"`` or ``"HTTP/1.0"``."""
        return self.protocol

    @property
    def elapsed(self) -> datetime.timedelta:
        """How long the call took: from its start to the end of the body once that is read (to now while it
        streams), from ``timings.total``; zero for a response that did not come off the network.
        ``timings.first_byte`` is the time to the response head (requests' ``elapsed``)."""
        timings = self.timings
        return datetime.timedelta(seconds=timings.total if timings is not None else 0.0)

    @property
    def links(self) -> dict[str, dict[str, str]]:
        """The ``Link`` header (RFC 8288) by relation: ``r.links["next"]["url"]``."""
        values = self.headers.get_all("link")
        return parse_links(values) if values else {}

    @property
    def cookies(self) -> dict[str, str]:
        """The cookies this response set (its ``Set-Cookie`` headers, as a jar would take them), by name.
        Cookies that delete one (already expired) are left out."""
        values = self.headers.get_all("set-cookie")
        if not values or self.request is None:
            return {}
        url = self.request.url
        out = {}
        for value in values:
            cookie = parse_set_cookie(value, url)
            if cookie is not None and not cookie.is_expired():
                out[cookie.name] = cookie.value
        return out

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    def raise_for_status(self) -> Response:
        """Raise ``HTTPStatusError`` for a 4xx or 5xx status; return the response otherwise."""
        code = self.status_code
        if 400 <= code < 600:
            kind = "Client error" if code < 500 else "Server error"
            where = self.request.url.redacted() if self.request is not None else "?"
            raise HTTPStatusError(f"{kind} '{code} {self.reason}' for url '{where}'", response=self)
        return self

    # -- body -----------------------------------------------------------------------------------

    @property
    def content(self) -> bytes:
        """The whole body (read and cached on first access)."""
        if self._source is not None:
            self.read()
        elif self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        return self._content

    @property
    def encoding(self) -> str:
        """The text encoding ``.text`` and ``iter_lines()`` use: what you set (``r.encoding = "cp1251"``),
        else the Content-Type's ``charset``, else UTF-8 for JSON, else ``apparent_encoding`` once the body
        is read (UTF-8 while it streams unread)."""
        declared = self._declared_encoding()
        if declared is not None:
            return declared
        if self._source is None and not self._unreadable:
            return self.apparent_encoding
        return "utf-8"

    @encoding.setter
    def encoding(self, value: str | None) -> None:
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"encoding must be a str or None, not {type(value).__name__}")
            codecs.lookup(value)  # LookupError for an unknown encoding
        self._encoding = value

    def _declared_encoding(self) -> str | None:
        chosen = self._encoding
        if chosen is not None:
            return chosen
        ctype = self.headers.get("content-type")
        declared = charset_of(ctype)
        if declared is not None:
            return declared
        if ctype is not None and "json" in ctype.split(";")[0].lower():
            return "utf-8"
        return None

    @property
    def apparent_encoding(self) -> str:
        """The encoding the body's bytes look like: a byte-order mark, an HTML/XML declaration, valid
        UTF-8, else a statistical guess (``charset_normalizer`` when installed) or ``windows-1252``."""
        return guess_encoding(self.content, self.headers.get("content-type"))

    @property
    def text(self) -> str:
        """The body decoded with ``encoding`` (undecodable bytes replaced)."""
        content = self.content
        if not content:
            return ""
        encoding = self._declared_encoding()
        if encoding is not None:
            try:
                return content.decode(encoding, errors="replace")
            except LookupError:  # a charset Python does not know: guess instead
                pass
        return decode_guessing(content, self.headers.get("content-type"))

    def json(self, **kwargs: Any) -> Any:  # json.loads's options; any JSON value
        return _json.loads(self.content, **kwargs)

    @property
    def is_closed(self) -> bool:
        return self._closed or self._source is None

    def __del__(self) -> None:
        # A streamed response dropped without close(): its connection is closed, never stranded (and
        # never reused: nobody read the rest of the body).
        source = self._source
        if source is not None:
            self._source = None
            try:
                source.abandon()
            except Exception:  # noqa: BLE001 - a finalizer must not raise (interpreter shutdown, ...)
                pass

    # -- reading the body: the asyncio methods, and the blocking ones scripts/unasync.py makes of them --

    # unasync: begin
    async def aread(self) -> bytes:
        """The whole body: read (once; then kept) if it is still streaming."""
        source = self._source
        if source is not None:
            content = await source.aread_all()  # a source of the other kind raises: nothing is lost
            self._source = None
            self._content = content
        elif self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        return self._content

    async def aiter_bytes(self, chunk_size: int | None = None) -> AsyncGenerator[bytes, None]:
        """Iterate over the (decoded) body as it arrives; ``chunk_size`` regroups the pieces."""
        source = self._source
        if source is None:
            if self._unreadable:
                raise RuntimeError(
                    "the body of a prior response is unreadable (it was closed by a follow-up)"
                )
            content = self._content
            if chunk_size is None or chunk_size <= 0:
                if content:
                    yield content
                return
            for i in range(0, len(content), chunk_size):
                yield content[i : i + chunk_size]
            return
        # Regrouping appends to one buffer and cuts whole pieces off its front once per piece read, so
        # it is linear in the body whatever chunk_size is (a bytes object sliced per piece is quadratic).
        pending = bytearray()
        try:
            while True:
                data = await source.aread_chunk()
                if data is None:
                    break
                if chunk_size is None or chunk_size <= 0:
                    if data:
                        yield data
                    continue
                pending += data
                end = len(pending) - len(pending) % chunk_size
                if end:
                    for i in range(0, end, chunk_size):
                        yield bytes(pending[i : i + chunk_size])
                    del pending[:end]
            if pending:
                yield bytes(pending)
        finally:
            if self._source is source and source.done:
                self._source = None

    async def aiter_lines(self) -> AsyncIterator[str]:
        """Iterate over the body's lines (decoded text; ``\\r\\n``, ``\\r`` and ``\\n`` end a line and are
        removed). A line longer than the client's ``max_body_size`` (in characters) is a
        ``BodyTooLargeError`` once the lines before it are served, and the response is closed."""
        source = self._source
        lines = _Lines(source.body_limit() if source is not None else 0, self.url)
        decoder = _incremental_decoder(self.encoding)
        chunks = self.aiter_bytes()  # a generator: closed at once when a line is too long
        try:
            async for chunk in chunks:
                for line in lines.feed(decoder.decode(chunk)):
                    yield line
                if lines.too_long:
                    raise lines.error()
            for line in lines.feed(decoder.decode(b"", final=True)):
                yield line
            if lines.too_long:
                raise lines.error()
        except BodyTooLargeError:
            await chunks.aclose()
            await self.aclose()
            raise
        if lines.parts:
            yield "".join(lines.parts)

    async def areadinto(self, buffer: Buffer) -> int:
        """Read the next bytes of the (decoded) body into ``buffer``, a writable bytes-like object (a
        ``bytearray``, a ``memoryview``, an ``array``...): how many, 0 at the end of the body. The blocking
        client receives a plain Content-Length body straight into ``buffer``, with no bytes object in
        between. It is for streamed responses (``client.stream``): a body already read into ``content``
        raises ``RuntimeError``."""
        view = _byte_view(buffer)
        source = self._source
        if source is None:
            self._check_streamable()
            return 0
        n = await source.areadinto(view)
        if n == 0 and self._source is source:
            self._source = None
        return n

    async def aiter_into(self, buffer: Buffer) -> AsyncIterator[memoryview]:
        """Iterate over the (decoded) body as views of ``buffer``, each holding the next bytes: the same
        memory every time, so a view is good until the next step, and no bytes object is made per piece."""
        view = _byte_view(buffer)
        size = len(view)
        if size == 0:
            raise ValueError("iter_into() needs a buffer of at least one byte")
        source = self._source
        if source is None:
            if self._unreadable:
                raise RuntimeError(
                    "the body of a prior response is unreadable (it was closed by a follow-up)"
                )
            content = self._content
            for i in range(0, len(content), size):
                n = min(size, len(content) - i)
                view[:n] = content[i : i + n]
                yield view[:n]
            return
        try:
            while True:
                n = await source.areadinto(view)
                if n == 0:
                    break
                yield view[:n]
        finally:
            if self._source is source and source.done:
                self._source = None

    async def awrite_to(self, file: _Writer, buffer_size: int = 1 << 18) -> int:
        """Stream the (decoded) body into ``file`` (anything with ``write(bytes-like)``) through one reused
        ``buffer_size``-byte buffer; returns the number of bytes written.
        .. async-only
        A ``write`` that returns an awaitable (an async file object's) is awaited.
        .. end
        """
        if buffer_size <= 0:
            raise ValueError(f"buffer_size must be positive, not {buffer_size!r}")
        written = 0
        async for piece in self.aiter_into(bytearray(buffer_size)):
            # sync-only: file.write(piece)
            result = file.write(piece)  # async-only
            if inspect.isawaitable(result):  # async-only
                await result  # async-only
            written += len(piece)
        return written

    async def aclose(self) -> None:
        """Release the connection: drained within 100 ms and pooled, else closed."""
        self._closed = True
        source = self._source
        if source is not None:
            self._source = None
            await source.aclose_body()

    async def __aenter__(self) -> Response:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _astripped(self) -> Response:
        """This response as a ``prior_response``: headers intact, body unreadable."""
        await self.aclose()
        self._unreadable = True
        self._content = b""
        return self

    # unasync: end

    # unasync: generated
    def read(self) -> bytes:
        """The whole body: read (once; then kept) if it is still streaming."""
        source = self._source
        if source is not None:
            content = source.read_all()  # a source of the other kind raises: nothing is lost
            self._source = None
            self._content = content
        elif self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        return self._content

    def iter_bytes(self, chunk_size: int | None = None) -> Generator[bytes, None]:
        """Iterate over the (decoded) body as it arrives; ``chunk_size`` regroups the pieces."""
        source = self._source
        if source is None:
            if self._unreadable:
                raise RuntimeError(
                    "the body of a prior response is unreadable (it was closed by a follow-up)"
                )
            content = self._content
            if chunk_size is None or chunk_size <= 0:
                if content:
                    yield content
                return
            for i in range(0, len(content), chunk_size):
                yield content[i : i + chunk_size]
            return
        # Regrouping appends to one buffer and cuts whole pieces off its front once per piece read, so
        # it is linear in the body whatever chunk_size is (a bytes object sliced per piece is quadratic).
        pending = bytearray()
        try:
            while True:
                data = source.read_chunk()
                if data is None:
                    break
                if chunk_size is None or chunk_size <= 0:
                    if data:
                        yield data
                    continue
                pending += data
                end = len(pending) - len(pending) % chunk_size
                if end:
                    for i in range(0, end, chunk_size):
                        yield bytes(pending[i : i + chunk_size])
                    del pending[:end]
            if pending:
                yield bytes(pending)
        finally:
            if self._source is source and source.done:
                self._source = None

    def iter_lines(self) -> Iterator[str]:
        """Iterate over the body's lines (decoded text; ``\\r\\n``, ``\\r`` and ``\\n`` end a line and are
        removed). A line longer than the client's ``max_body_size`` (in characters) is a
        ``BodyTooLargeError`` once the lines before it are served, and the response is closed."""
        source = self._source
        lines = _Lines(source.body_limit() if source is not None else 0, self.url)
        decoder = _incremental_decoder(self.encoding)
        chunks = self.iter_bytes()  # a generator: closed at once when a line is too long
        try:
            for chunk in chunks:
                for line in lines.feed(decoder.decode(chunk)):
                    yield line
                if lines.too_long:
                    raise lines.error()
            for line in lines.feed(decoder.decode(b"", final=True)):
                yield line
            if lines.too_long:
                raise lines.error()
        except BodyTooLargeError:
            chunks.close()
            self.close()
            raise
        if lines.parts:
            yield "".join(lines.parts)

    def readinto(self, buffer: Buffer) -> int:
        """Read the next bytes of the (decoded) body into ``buffer``, a writable bytes-like object (a
        ``bytearray``, a ``memoryview``, an ``array``...): how many, 0 at the end of the body. The blocking
        client receives a plain Content-Length body straight into ``buffer``, with no bytes object in
        between. It is for streamed responses (``client.stream``): a body already read into ``content``
        raises ``RuntimeError``."""
        view = _byte_view(buffer)
        source = self._source
        if source is None:
            self._check_streamable()
            return 0
        n = source.readinto(view)
        if n == 0 and self._source is source:
            self._source = None
        return n

    def iter_into(self, buffer: Buffer) -> Iterator[memoryview]:
        """Iterate over the (decoded) body as views of ``buffer``, each holding the next bytes: the same
        memory every time, so a view is good until the next step, and no bytes object is made per piece."""
        view = _byte_view(buffer)
        size = len(view)
        if size == 0:
            raise ValueError("iter_into() needs a buffer of at least one byte")
        source = self._source
        if source is None:
            if self._unreadable:
                raise RuntimeError(
                    "the body of a prior response is unreadable (it was closed by a follow-up)"
                )
            content = self._content
            for i in range(0, len(content), size):
                n = min(size, len(content) - i)
                view[:n] = content[i : i + n]
                yield view[:n]
            return
        try:
            while True:
                n = source.readinto(view)
                if n == 0:
                    break
                yield view[:n]
        finally:
            if self._source is source and source.done:
                self._source = None

    def write_to(self, file: _Writer, buffer_size: int = 1 << 18) -> int:
        """Stream the (decoded) body into ``file`` (anything with ``write(bytes-like)``) through one reused
        ``buffer_size``-byte buffer; returns the number of bytes written.
        """
        if buffer_size <= 0:
            raise ValueError(f"buffer_size must be positive, not {buffer_size!r}")
        written = 0
        for piece in self.iter_into(bytearray(buffer_size)):
            file.write(piece)
            written += len(piece)
        return written

    def close(self) -> None:
        """Release the connection: drained within 100 ms and pooled, else closed."""
        self._closed = True
        source = self._source
        if source is not None:
            self._source = None
            source.close_body()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stripped(self) -> Response:
        """This response as a ``prior_response``: headers intact, body unreadable."""
        self.close()
        self._unreadable = True
        self._content = b""
        return self

    # unasync: generated end

    def _check_streamable(self) -> None:
        """For readinto() on a response without a streaming body: why there is nothing to read, if not
        because the stream ended."""
        if self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        if self._content:
            raise RuntimeError(
                "this response's body was already read into .content (client.get() and friends read it): "
                "open it with client.stream(...) to read it into a buffer"
            )

    def challenges(self) -> list[Challenge]:
        """Parsed ``WWW-Authenticate`` (401) or ``Proxy-Authenticate`` (407) challenges."""
        if self.status_code == 401:
            return parse_challenges(self.headers.get_all("WWW-Authenticate"))
        if self.status_code == 407:
            return parse_challenges(self.headers.get_all("Proxy-Authenticate"))
        return []

    def __repr__(self) -> str:
        return f"<Response [{self.status_code} {self.reason}]>"


def _plain_str(value: object, what: str) -> str:
    """``value`` as a plain ``str``: a str subclass (an ``enum.StrEnum`` member) gives its characters."""
    if type(value) is str:
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return str.__str__(value)


def _byte_view(buffer: Buffer) -> memoryview:
    """``buffer`` as a writable one-dimensional byte view (``TypeError`` when it is not one)."""
    view = memoryview(buffer)
    if view.readonly:
        raise TypeError(f"the body is read into a writable buffer, not a read-only {type(buffer).__name__}")
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


_LINE_END = re.compile("\r\n|\r|\n")


class _Lines:
    """``iter_lines()``'s splitter: decoded text in, the lines it completes out.

    Linear in the body: each piece is split once (only the new text is searched) and a line that spans
    pieces is kept as a list of its parts, joined once it ends (adding each piece to a string is
    quadratic in the line's length). A ``\\r`` that ends a piece ends its line at once; a ``\\n`` that
    begins the next piece is that line ending's rest. Only ``\\r\\n``, ``\\r`` and ``\\n`` end a line
    (``str.splitlines`` would also split at ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028
    and U+2029, which can be data). A line longer than ``limit`` characters (0: no limit) sets
    ``too_long`` as soon as it is that long, and what is held of it is dropped: memory stays bounded."""

    __slots__ = ("parts", "size", "after_cr", "too_long", "limit", "url")

    def __init__(self, limit: int, url: URL | None) -> None:
        self.parts: list[str] = []  # the unfinished line, in pieces
        self.size = 0  # its length
        self.after_cr = False  # the last piece ended with "\r"
        self.too_long = False  # a line passed the limit (the lines before it are returned)
        self.limit = limit
        self.url = url

    def feed(self, text: str) -> list[str]:
        """The lines ``text`` completes; when one is too long, those before it, and ``too_long`` is set."""
        if not text:
            return []
        if self.after_cr:
            self.after_cr = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        self.after_cr = text[-1] == "\r"
        lines = _LINE_END.split(text) if "\r" in text else text.split("\n")
        last = lines.pop()
        held = self.size
        parts = self.parts
        if parts and lines:
            parts.append(lines[0])
            lines[0] = "".join(parts)
            parts.clear()
            self.size = 0
        if last:
            parts.append(last)
            self.size += len(last)
        limit = self.limit
        if limit and held + len(text) > limit:
            # (only past the limit is each line measured: a normal body never gets here)
            for i, line in enumerate(lines):
                if len(line) > limit:
                    del lines[i:]
                    self.too_long = True
                    break
            if self.size > limit:
                self.too_long = True
            if self.too_long:
                parts.clear()
        return lines

    def error(self) -> BodyTooLargeError:
        limit = self.limit
        return BodyTooLargeError(
            f"response line too long: over {limit} characters without a line end, more than "
            f"max_body_size={limit}",
            url=self.url,
            phase="read",
        )


def _incremental_decoder(encoding: str) -> codecs.IncrementalDecoder:
    try:
        return codecs.getincrementaldecoder(encoding)(errors="replace")
    except LookupError:
        return codecs.getincrementaldecoder("utf-8")(errors="replace")


def make_response(
    status_code: int, reason: str, protocol: str, headers: Headers, request: Request, route: Route | None
) -> Response:
    """A Response from a parsed head (no checks, no ``__init__`` argument parsing): the network's path."""
    response = Response.__new__(Response)
    response.status_code = status_code
    response.reason = reason
    response.headers = headers
    response.request = request
    response.protocol = protocol
    response.prior_response = None
    response._content = b""
    response._source = None
    response._unreadable = False
    response._closed = False
    response.network_response = None
    response.route = route
    response.timings = None
    response._encoding = None
    return response
