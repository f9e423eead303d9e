"""The per-request path: Headers, Request, Response, the interceptor chain, the built-in interceptors
and the HTTP/1.1 exchange on a pooled connection.

Theory of operation
-------------------
A call runs through a list of interceptors (application ones, RetryAndFollowUp, Bridge, Connect,
network ones, CallServer); each gets a ``RealInterceptorChain`` and returns a ``Response``. The chain
object is copied per hop (cheap: a typed object with eight fields), which is what lets interceptors
call ``proceed`` any number of times and lets us check that network interceptors call it exactly once.

This module is the unit that the compiled build turns into typed ``cdef`` classes via ``_core_c.pxd``
(Cython's pure-Python mode). It is one module rather than one per class because the classes call each
other on every request; inside one module Cython turns those calls into direct C calls.

I/O rules (PERFORMANCE.md): one ``sendall`` of the request head and a small body, one ``recv_into`` a
per-connection buffer that usually returns the whole head and a small body. Timeouts are kernel socket
options (``SO_RCVTIMEO``/``SO_SNDTIMEO``), set only when they change, so a keep-alive request costs two
syscalls. The whole-call deadline is a watchdog that cancels the call (closes its socket).

Connections go back to the pool only when their response body was read to the end (or drained within
100 ms on an early close) and both sides agreed to keep the connection alive.
"""

from __future__ import annotations

import json as _json
import socket
import struct
import threading
import time
import zlib
from ssl import SSLSocket as _SSLSocket
from typing import Any

from fastnet._internal.http1.parser import ResponseParser, receive_exact
from fastnet._version import __version__
from fastnet.exceptions import (
    CallTimeout,
    CanceledError,
    ConnectionClosedError,
    HTTPStatusError,
    NetworkError,
    PoolTimeout,
    ProtocolError,
    ReadTimeout,
    TimeoutError,
    TlsVerificationError,
    WriteTimeout,
)
from fastnet.url import URL
from fastnet.url import _cache as _URL_CACHE

__all__ = [
    "BridgeInterceptor",
    "CallServerInterceptor",
    "ClientCore",
    "ConnectInterceptor",
    "Exchange",
    "FunctionInterceptor",
    "Headers",
    "RealCall",
    "RealConnection",
    "RealInterceptorChain",
    "Request",
    "RequestBody",
    "Response",
    "RetryAndFollowUpInterceptor",
]

USER_AGENT = f"fastnet/{__version__}"
BODY_NONE = 0
BODY_LENGTH = 1
BODY_CHUNKED = 2
BODY_UNTIL_CLOSE = 3
RECV_BUFFER_SIZE = 32768
# Bodies up to this size are sent in the same ``sendall`` as the head.
SMALL_BODY = 65536
# An idle connection older than this is probed for a peer close before reuse (one MSG_PEEK recv).
PROBE_IDLE_AFTER = 1.0
DRAIN_TIMEOUT = 0.1
MAX_FOLLOW_UPS = 20
_GEVENT = socket.socket.__module__.startswith("gevent")
_monotonic = time.monotonic
_RAW_RECV = socket.socket.recv

_SENSITIVE = frozenset(("authorization", "cookie", "proxy-authorization", "set-cookie"))
# RFC 9110 §5.6.2: token = 1*tchar; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
#                  "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_STATUS_REASONS = {
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
# Methods that announce an empty body with ``Content-Length: 0`` (RFC 9110 §8.6).
_EMPTY_BODY_LENGTH = frozenset(("POST", "PUT", "PATCH"))
# Statuses RetryAndFollowUp has to look at; everything else is returned at once.
_FOLLOW_UP_CODES = frozenset((300, 301, 302, 303, 307, 308, 401, 407, 408, 503))


# ------------------------------------------------------------------------------------------------
# Headers
# ------------------------------------------------------------------------------------------------


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"header name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("header name is empty")
    for i, ch in enumerate(name):
        if ch not in _TCHAR:
            raise ValueError(f"Unexpected char {ord(ch):#04x} at {i} in header name: {name!r}")
    return name


def _check_value(name: str, value: Any) -> str:
    # RFC 9110 §5.5: field-value = *field-content; field-vchar = VCHAR / obs-text; SP and HTAB inside.
    # CR, LF, NUL and other controls are rejected (they would split or truncate the header).
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        elif isinstance(value, bytes):
            value = value.decode("latin-1")
        else:
            raise TypeError(f"value of header {name!r} must be a str, not {type(value).__name__}")
    for i, ch in enumerate(value):
        if (ch < " " and ch != "\t") or ch == "\x7f" or ch > "\xff":
            shown = "" if name.lower() in _SENSITIVE else f": {value!r}"
            raise ValueError(f"Unexpected char {ord(ch):#04x} at {i} in {name} value{shown}")
    return value.strip(" \t")


def _headers_from_list(items: list) -> Headers:
    """Wrap trusted (already validated or received) pairs without copying or checking them."""
    h = Headers.__new__(Headers)
    h._items = items
    h._index = None
    h._wire = None
    h._heads = None
    return h


class Headers:
    """An ordered, case-insensitive multi-map of header fields. Immutable.

    >>> h = Headers([("Accept", "text/html"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")])
    >>> h["accept"], h.get_all("Set-Cookie"), len(h)
    ('text/html', ['a=1', 'b=2'], 3)
    >>> h.set("Accept", "*/*").remove("set-cookie").items()
    [('Accept', '*/*')]

    Names must be RFC 9110 tokens and values must not contain CR, LF, NUL or other controls:
    violations raise ``ValueError`` naming the header.
    """

    __slots__ = ("_items", "_index", "_wire", "_heads")

    def __init__(self, data: Any = None) -> None:
        items: list = []
        if data is not None:
            if isinstance(data, Headers):
                items = list(data._items)
            else:
                pairs = data.items() if isinstance(data, dict) else data
                for pair in pairs:
                    name, value = pair
                    name = _check_name(name)
                    items.append((name, _check_value(name, value)))
        self._items = items
        self._index = None
        self._wire = None
        self._heads = None

    def _lookup(self) -> dict:
        index = self._index
        if index is None:
            index = {}
            for name, value in self._items:
                index[name.lower()] = value
            self._index = index
        return index

    def get(self, name: str, default: Any = None) -> Any:
        """The last value of ``name`` (case-insensitive), or ``default``."""
        return self._lookup().get(name.lower(), default)

    def get_all(self, name: str) -> list:
        """Every value of ``name`` in order."""
        key = name.lower()
        return [v for n, v in self._items if n.lower() == key]

    def __getitem__(self, name: str) -> str:
        value = self._lookup().get(name.lower())
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._lookup()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Any:
        return iter([n for n, _ in self._items])

    def __bool__(self) -> bool:
        return len(self._items) > 0

    def items(self) -> list:
        """Every (name, value) pair in order, repeats included."""
        return list(self._items)

    def keys(self) -> list:
        return [n for n, _ in self._items]

    def values(self) -> list:
        return [v for _, v in self._items]

    def add(self, name: str, value: Any) -> Headers:
        """A copy with one more field."""
        name = _check_name(name)
        items = list(self._items)
        items.append((name, _check_value(name, value)))
        return _headers_from_list(items)

    def set(self, name: str, value: Any) -> Headers:
        """A copy where ``name`` has exactly this one value (in place of the first occurrence)."""
        name = _check_name(name)
        value = _check_value(name, value)
        key = name.lower()
        items: list = []
        placed = False
        for pair in self._items:
            if pair[0].lower() == key:
                if not placed:
                    items.append((name, value))
                    placed = True
            else:
                items.append(pair)
        if not placed:
            items.append((name, value))
        return _headers_from_list(items)

    def remove(self, name: str) -> Headers:
        """A copy without any field called ``name``."""
        key = name.lower()
        if key not in self._lookup():
            return self
        return _headers_from_list([p for p in self._items if p[0].lower() != key])

    def to_wire(self) -> bytes:
        """The header block as sent: ``Name: value\\r\\n`` per field (cached)."""
        wire = self._wire
        if wire is None:
            wire = "".join([f"{n}: {v}\r\n" for n, v in self._items]).encode("latin-1")
            self._wire = wire
        return wire

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (dict, list)):
            try:
                other = Headers(other)
            except (TypeError, ValueError):
                return False
        if not isinstance(other, Headers):
            return NotImplemented
        return [(n.lower(), v) for n, v in self._items] == [(n.lower(), v) for n, v in other._items]

    def __hash__(self) -> int:  # immutable, but equality is structural: unhashable like dict
        raise TypeError("unhashable type: 'Headers'")

    def __repr__(self) -> str:
        shown = [(n, "██" if n.lower() in _SENSITIVE else v) for n, v in self._items]
        return f"Headers({shown!r})"


def _as_headers(headers: Any) -> Headers:
    if headers is None:
        return _EMPTY_HEADERS
    if isinstance(headers, Headers):
        return headers
    return Headers(headers)


_EMPTY_HEADERS = _headers_from_list([])


# ------------------------------------------------------------------------------------------------
# Request and its body
# ------------------------------------------------------------------------------------------------

KIND_BYTES = 0
KIND_FILE = 1
KIND_STREAM = 2


class RequestBody:
    """A request body that knows its length and whether it can be sent more than once.

    ``bytes``/``str`` bodies are replayable; a seekable file is rewound for each attempt; a
    non-seekable file or an iterator of bytes is *one-shot*: it is never replayed by a retry or a
    redirect. Length ``-1`` means unknown (sent chunked).

    >>> RequestBody(b"abc").length, RequestBody(iter([b"a"])).one_shot
    (3, True)
    """

    __slots__ = ("_data", "_kind", "length", "content_type", "one_shot", "_start", "_used")

    def __init__(self, data: Any, content_type: str | None = None, *, one_shot: bool | None = None) -> None:
        self.content_type = content_type
        self._start = 0
        self._used = False
        if isinstance(data, str):
            data = data.encode("utf-8")
            if content_type is None:
                self.content_type = "text/plain; charset=utf-8"
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._data = bytes(data)
            self._kind = KIND_BYTES
            self.length = len(self._data)
            self.one_shot = bool(one_shot)
            return
        if hasattr(data, "read"):
            self._data = data
            self._kind = KIND_FILE
            seekable = False
            try:
                seekable = bool(data.seekable())
            except (AttributeError, OSError, ValueError):
                seekable = False
            if seekable:
                self._start = data.tell()
                end = data.seek(0, 2)
                data.seek(self._start)
                self.length = end - self._start
                self.one_shot = bool(one_shot)
            else:
                self.length = -1
                self.one_shot = True if one_shot is None else bool(one_shot)
            return
        if hasattr(data, "__iter__") or hasattr(data, "__next__"):
            self._data = iter(data)
            self._kind = KIND_STREAM
            self.length = -1
            self.one_shot = True if one_shot is None else bool(one_shot)
            return
        raise TypeError(
            f"request body must be bytes, str, a file object or an iterator of bytes, "
            f"not {type(data).__name__}"
        )

    @property
    def content(self) -> bytes | None:
        """The bytes of an in-memory body, else None."""
        return self._data if self._kind == KIND_BYTES else None

    def chunks(self) -> Any:
        """The body's bytes as an iterator; a seekable file is rewound first. One-shot bodies once only."""
        if self._kind == KIND_BYTES:
            return iter((self._data,))
        if self.one_shot:
            if self._used:
                raise RuntimeError("a one-shot request body cannot be sent twice")
            self._used = True
        if self._kind == KIND_FILE:
            if not self.one_shot or self._start:
                try:
                    self._data.seek(self._start)
                except (AttributeError, OSError, ValueError):
                    pass
            return _file_chunks(self._data)
        return self._data

    @property
    def used(self) -> bool:
        return self._used


def _file_chunks(f: Any) -> Any:
    while True:
        block = f.read(65536)
        if not block:
            return
        if isinstance(block, str):
            block = block.encode("utf-8")
        yield block


_KNOWN_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"))


def _check_method(method: Any) -> str:
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    if not method or not all(c in _TCHAR for c in method):
        raise ValueError(f"Invalid HTTP method {method!r}")
    upper = method.upper()
    return upper if upper in _KNOWN_METHODS else method


class Request:
    """An immutable HTTP request. ``replace(**changes)`` makes a modified copy.

    >>> r = Request("POST", "http://127.0.0.1:8080/items", headers={"X-Trace": "1"}, json={"a": 1})
    >>> r.method, str(r.url), r.headers["content-type"]
    ('POST', 'http://127.0.0.1:8080/items', 'application/json')

    ``body`` accepts ``bytes``, ``str``, a file object, an iterator of bytes or a ``RequestBody``;
    ``json=`` serialises a value. ``proxy=`` overrides the client's proxy for this request only.
    """

    __slots__ = ("method", "url", "headers", "body", "proxy", "tag")

    def __init__(
        self,
        method: str,
        url: Any,
        headers: Any = None,
        body: Any = None,
        json: Any = None,
        proxy: Any = None,
        tag: Any = None,
    ) -> None:
        if method not in _KNOWN_METHODS:
            method = _check_method(method)
        self.method = method
        if isinstance(url, URL):
            self.url = url
        else:
            cached = _URL_CACHE.get(url) if isinstance(url, str) else None
            self.url = cached if cached is not None else URL(url)
        hdrs = _EMPTY_HEADERS if headers is None else _as_headers(headers)
        if json is not None:
            if body is not None:
                raise ValueError("pass either body= or json=, not both")
            body = RequestBody(_json.dumps(json, separators=(",", ":")).encode("utf-8"), "application/json")
            if "content-type" not in hdrs:
                hdrs = hdrs.add("Content-Type", "application/json")
        elif body is not None and not isinstance(body, RequestBody):
            body = RequestBody(body)
        self.headers = hdrs
        self.body = body
        self.proxy = proxy
        self.tag = tag

    def replace(self, **changes: Any) -> Request:
        """A copy with some fields changed: method, url, headers, body, proxy, tag."""
        method = self.method
        url = self.url
        headers = self.headers
        body = self.body
        proxy = self.proxy
        tag = self.tag
        for key, value in changes.items():
            if key == "method":
                method = value if value in _KNOWN_METHODS else _check_method(value)
            elif key == "url":
                url = value if isinstance(value, URL) else URL(value)
            elif key == "headers":
                headers = _as_headers(value)
            elif key == "body":
                body = value if value is None or isinstance(value, RequestBody) else RequestBody(value)
            elif key == "proxy":
                proxy = value
            elif key == "tag":
                tag = value
            else:
                raise TypeError(f"Request.replace() got an unexpected keyword argument {key!r}")
        return _make_request(method, url, headers, body, proxy, tag)

    def with_headers(self, headers: Headers) -> Request:
        """A copy with other (already validated) headers: the Bridge's fast path."""
        return _make_request(self.method, self.url, headers, self.body, self.proxy, self.tag)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.url.redacted()}>"


def _make_request(method: str, url: Any, headers: Headers, body: Any, proxy: Any, tag: Any) -> Request:
    """A Request from already validated parts (no checks, no __init__ argument parsing)."""
    new = Request.__new__(Request)
    new.method = method
    new.url = url
    new.headers = headers
    new.body = body
    new.proxy = proxy
    new.tag = tag
    return new


def _set_once(self: Any, name: str, value: Any) -> None:
    """Pure build: a Request field can be set while the object is built, never changed afterwards.
    (The compiled build declares the fields ``readonly`` in the .pxd, which does the same in C.)"""
    try:
        getattr(self, name)
    except AttributeError:
        object.__setattr__(self, name, value)
        return
    raise AttributeError(f"Request is immutable: use request.replace({name}=...) instead of setting {name}")


# Compiled functions are not Python functions: that tells the two builds apart from inside the source.
if type(_set_once).__name__ == "function":
    Request.__setattr__ = _set_once  # type: ignore[method-assign, assignment]


# ------------------------------------------------------------------------------------------------
# Response
# ------------------------------------------------------------------------------------------------


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
        "_exchange",
        "_unreadable",
        "_closed",
        "network_response",
        "route",
        "__weakref__",
    )

    def __init__(
        self,
        status_code: int,
        headers: Any = None,
        content: Any = b"",
        request: Request | None = None,
        reason: str | None = None,
        protocol: str = "HTTP/1.1",
    ) -> None:
        if not isinstance(status_code, int) or not 100 <= status_code <= 999:
            raise ValueError(f"status_code must be an int in 100-999, not {status_code!r}")
        self.status_code = status_code
        self.reason = _STATUS_REASONS.get(status_code, "") if reason is None else reason
        self.headers = _as_headers(headers)
        if isinstance(content, str):
            content = content.encode("utf-8")
        self._content = bytes(content) if content is not None else b""
        self.request = request
        self.protocol = protocol
        self.prior_response = None
        self._exchange = None
        self._unreadable = False
        self._closed = False
        self.network_response = None
        self.route = None

    # -- metadata -------------------------------------------------------------------------------

    @property
    def url(self) -> URL | None:
        return self.request.url if self.request is not None else None

    @property
    def history(self) -> list:
        """Earlier responses of this call (redirects, auth challenges), oldest first."""
        out = []
        prior = self.prior_response
        while prior is not None:
            out.append(prior)
            prior = prior.prior_response
        out.reverse()
        return out

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def is_redirect(self) -> bool:
        return self.status_code in (300, 301, 302, 303, 307, 308) and "location" in self.headers

    def header(self, name: str, default: Any = None) -> Any:
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
        if self._exchange is not None:
            self.read()
        elif self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        return self._content

    def read(self) -> bytes:
        exchange = self._exchange
        if exchange is not None:
            self._exchange = None
            self._content = exchange.read_all()
        elif self._unreadable:
            raise RuntimeError("the body of a prior response is unreadable (it was closed by a follow-up)")
        return self._content

    @property
    def encoding(self) -> str:
        ctype = self.headers.get("content-type")
        if ctype:
            for param in ctype.split(";")[1:]:
                key, _, value = param.strip().partition("=")
                if key.strip().lower() == "charset" and value:
                    return value.strip().strip('"')
        return "utf-8"

    @property
    def text(self) -> str:
        try:
            return self.content.decode(self.encoding, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json(self, **kwargs: Any) -> Any:
        return _json.loads(self.content, **kwargs)

    def iter_bytes(self, chunk_size: int | None = None) -> Any:
        """Iterate over the (decoded) body as it arrives; ``chunk_size`` regroups the pieces."""
        exchange = self._exchange
        if exchange is None:
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
        pending = b""
        try:
            while True:
                data = exchange.read_chunk()
                if data is None:
                    break
                if chunk_size is None or chunk_size <= 0:
                    if data:
                        yield data
                    continue
                pending += data
                while len(pending) >= chunk_size:
                    yield pending[:chunk_size]
                    pending = pending[chunk_size:]
            if pending:
                yield pending
        finally:
            if self._exchange is exchange and exchange.done:
                self._exchange = None

    def iter_lines(self) -> Any:
        """Iterate over the body's lines (decoded text, line endings removed)."""
        pending = ""
        decoder = _incremental_decoder(self.encoding)
        for chunk in self.iter_bytes():
            pending += decoder.decode(chunk)
            lines = pending.splitlines(keepends=True)
            pending = ""
            for line in lines:
                if line.endswith(("\n", "\r")) and not (line.endswith("\r") and line is lines[-1]):
                    yield line.rstrip("\r\n")
                else:
                    pending = line
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending.rstrip("\r\n")

    def close(self) -> None:
        """Release the connection: drained within 100 ms and pooled, else closed."""
        self._closed = True
        exchange = self._exchange
        if exchange is not None:
            self._exchange = None
            exchange.close_body()

    @property
    def is_closed(self) -> bool:
        return self._closed or self._exchange is None

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _stripped(self) -> Response:
        """This response as a ``prior_response``: headers intact, body unreadable."""
        self.close()
        self._unreadable = True
        self._content = b""
        return self

    def challenges(self) -> list:
        """Parsed ``WWW-Authenticate`` (401) or ``Proxy-Authenticate`` (407) challenges."""
        from fastnet.authenticator import parse_challenges

        if self.status_code == 401:
            return parse_challenges(self.headers.get_all("WWW-Authenticate"))
        if self.status_code == 407:
            return parse_challenges(self.headers.get_all("Proxy-Authenticate"))
        return []

    def __repr__(self) -> str:
        return f"<Response [{self.status_code} {self.reason}]>"


def _incremental_decoder(encoding: str) -> Any:
    import codecs

    try:
        return codecs.getincrementaldecoder(encoding)(errors="replace")
    except LookupError:
        return codecs.getincrementaldecoder("utf-8")(errors="replace")


# ------------------------------------------------------------------------------------------------
# Connections and exchanges
# ------------------------------------------------------------------------------------------------


def _timeval(seconds: float) -> bytes:
    if seconds <= 0:
        return struct.pack("ll", 0, 0)
    whole = int(seconds)
    micros = int((seconds - whole) * 1_000_000)
    if whole == 0 and micros == 0:
        micros = 1
    return struct.pack("ll", whole, micros)


class RealConnection:
    """One socket to a route, with a reusable receive buffer and its response parser.

    Created by the connect step (``fastnet._internal.connection``) once the socket is connected,
    tunneled and TLS-wrapped. Timeouts are kernel socket options changed only when they differ from
    the last ones set; under gevent the socket's own timeout is used so waits stay cooperative.
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
        "__weakref__",
    )

    def __init__(
        self, sock: Any, route: Any, address: Any, is_tls: bool = False, http_proxy: bool = False
    ) -> None:
        self.sock = sock
        self.sendall = sock.sendall
        self.recv_into = sock.recv_into
        self.route = route
        self.address = address
        self.parser = ResponseParser()
        self.buf = bytearray(RECV_BUFFER_SIZE)
        now = time.monotonic()
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

    def set_timeouts(self, read_timeout: float, write_timeout: float) -> None:
        sock = self.sock
        if _GEVENT or self.is_tls:
            # ssl retries a read or write that a kernel timeout interrupted (a blocking socket's
            # EAGAIN looks like "want read"), forever: TLS sockets need the socket's own timeout,
            # which serves reads and writes alike (the read timeout)
            t = read_timeout if read_timeout > 0 else None
            if read_timeout != self.read_timeout:
                sock.settimeout(t)
                self.read_timeout = read_timeout
            return
        if read_timeout != self.read_timeout:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(read_timeout))
            self.read_timeout = read_timeout
        if write_timeout != self.write_timeout:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(write_timeout))
            self.write_timeout = write_timeout

    def is_healthy(self) -> bool:
        """False when the peer closed (or sent unexpected bytes) while the connection was idle."""
        if self.closed:
            return False
        sock = self.sock
        try:
            # the raw socket's recv: SSLSocket.recv refuses flags; a TLS peer's close_notify is data here
            data = _RAW_RECV(sock, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
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


def _tls_peek_healthy(sock: Any) -> bool:
    # For TLS, readable bytes while idle are usually a close_notify alert or a session ticket;
    # tickets arrive right after the handshake (TLS 1.3), so only treat "pending" as healthy.
    try:
        return sock.pending() > 0
    except (AttributeError, OSError):
        return False


class Exchange:
    """One request/response on one connection: write the request, read the head, stream the body.

    Built by ``_new_exchange`` (no ``__init__``: the per-request path skips argument parsing)."""

    __slots__ = (
        "call",
        "connection",
        "request",
        "body_mode",
        "keep_alive",
        "done",
        "decompressor",
        "body_bytes",
        "failed",
        "head_request",
        "content_encoding",
    )

    # -- writing --------------------------------------------------------------------------------

    def write_request(self, head: bytes, body: RequestBody | None, expect_continue: bool) -> Any:
        conn = self.connection
        sock = conn.sock
        events = self.call.events
        if events is not None:
            events.request_headers_start(self.call)
        try:
            if body is None:
                conn.sendall(head)
                if events is not None:
                    events.request_headers_end(self.call, self.request)
                return None
            data = body.content
            if data is not None and len(data) <= SMALL_BODY and not expect_continue:
                sock.sendall(head + data if data else head)
                if events is not None:
                    events.request_headers_end(self.call, self.request)
                    events.request_body_start(self.call)
                    events.request_body_end(self.call, len(data))
                return None
            sock.sendall(head)
            if events is not None:
                events.request_headers_end(self.call, self.request)
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
        events = self.call.events
        if events is not None:
            events.request_body_start(self.call)
        total = 0
        chunked = body.length < 0
        for chunk in body.chunks():
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            total += len(chunk)
            if chunked:
                sock.sendall(b"%x\r\n%b\r\n" % (len(chunk), chunk))
            else:
                sock.sendall(chunk)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
        elif total != body.length:
            raise ProtocolError(f"request body was {total} bytes, but its declared length is {body.length}")
        if events is not None:
            events.request_body_end(self.call, total)

    # -- reading --------------------------------------------------------------------------------

    def fill(self, in_head: bool) -> int:
        """One ``recv_into`` the connection's buffer, fed to the parser. Returns the byte count."""
        conn = self.connection
        try:
            n = conn.recv_into(conn.buf)
        except OSError as exc:
            self.failed = True
            raise self.map_error(exc, "read") from exc
        if n:
            conn.parser.feed_from(conn.buf, n)
        elif self.call.canceled:  # cancel() shut the socket down: that is no peer EOF
            self.failed = True
            raise self.map_error(CanceledError("canceled"), "read")
        return n

    def read_head(self, head_request: bool, expect_continue: bool = False) -> Any:
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
                if self.call.canceled:
                    raise self.call.canceled_error(self.request)
                if not received:
                    raise ConnectionClosedError("unexpected end of stream before the response head")
                try:
                    parser.feed(b"")
                    head = parser.read_head(head_request)
                except ProtocolError:
                    raise
                raise ProtocolError("unexpected end of stream in the response head")
            received = True

    def read_chunk(self) -> Any:
        """The next piece of the decoded body (never empty), or None at the end."""
        if self.done:
            return None
        parser = self.connection.parser
        call = self.call
        while True:
            try:
                data = parser.read_body()
                if data is None:
                    self.finish(True)
                    return None
                if not data:
                    if call.canceled:
                        raise self.map_error(CanceledError("canceled while reading the body"), "read")
                    n = self.fill(False)
                    if n == 0:
                        if call.canceled:
                            raise call.canceled_error(self.request)
                        parser.feed(b"")
                    continue
            except NetworkError as exc:
                self.finish(False)
                self.call.body_failed(exc)
                raise
            self.body_bytes += len(data)
            decompressor = self.decompressor
            if decompressor is not None:
                try:
                    data = decompressor.decompress(data)
                except zlib.error as exc:
                    self.finish(False)
                    err = ProtocolError(f"invalid gzip body: {exc}", url=self.request.url, phase="read")
                    self.call.body_failed(err)
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
            call = self.call
            try:
                content, received = receive_exact(conn.recv_into, first, total)
                if received < total and call.canceled:
                    raise call.canceled_error(self.request)
                if received < total:
                    parser.skip_body_bytes(received - len(first))
                    parser.feed(b"")
                    parser.read_body()
                    raise ProtocolError(f"unexpected end of stream: {total - received} body bytes missing")
                if call.canceled:
                    raise CanceledError("canceled while reading the response body")
            except NetworkError as exc:
                self.finish(False)
                self.call.body_failed(exc)
                raise
            except OSError as exc:
                self.finish(False)
                err = self.map_error(exc, "read")
                self.call.body_failed(err)
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
        events = self.call.events
        if events is not None and complete:
            events.response_body_end(self.call, self.body_bytes)
        self.call.release_connection(conn, reusable)

    def close_body(self) -> None:
        """Early close: drain the rest within DRAIN_TIMEOUT to keep the connection, else close it."""
        if self.done:
            return
        conn = self.connection
        if self.body_mode == BODY_UNTIL_CLOSE or self.call.canceled or conn.closed:
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
        call = self.call
        url = self.request.url if self.request is not None else None
        if call.canceled:
            if call.timed_out:
                return CallTimeout("call timeout", url=url, phase=phase)
            return CanceledError("canceled", url=url, phase=phase)
        if isinstance(exc, NetworkError):
            return exc
        if isinstance(exc, (BlockingIOError, socket.timeout)) or type(exc).__name__ in (
            "SSLWantReadError",
            "SSLWantWriteError",
        ):
            if phase == "write":
                return WriteTimeout("write timed out", url=url, phase=phase)
            return ReadTimeout("read timed out", url=url, phase=phase)
        if isinstance(exc, ConnectionError) or isinstance(exc, OSError):
            return ConnectionClosedError(f"connection lost: {exc}", url=url, phase=phase)
        return ConnectionClosedError(str(exc), url=url, phase=phase)


def _new_exchange(call: RealCall, connection: RealConnection) -> Exchange:
    exchange = Exchange.__new__(Exchange)
    exchange.call = call
    exchange.connection = connection
    exchange.request = None
    exchange.body_mode = BODY_NONE
    exchange.keep_alive = False
    exchange.done = False
    exchange.decompressor = None
    exchange.body_bytes = 0
    exchange.failed = False
    exchange.head_request = False
    exchange.content_encoding = ""
    return exchange


# ------------------------------------------------------------------------------------------------
# The chain and the built-in interceptors
# ------------------------------------------------------------------------------------------------


class FunctionInterceptor:
    """Adapts a plain function ``f(chain) -> Response`` to the Interceptor protocol."""

    __slots__ = ("function",)

    def __init__(self, function: Any) -> None:
        self.function = function

    def intercept(self, chain: RealInterceptorChain) -> Response:
        return self.function(chain)

    def __repr__(self) -> str:
        return f"<interceptor {getattr(self.function, '__qualname__', self.function)!r}>"


class RealInterceptorChain:
    """The ``Chain`` an interceptor receives: the request, ``proceed``, the call, the connection
    (None above ConnectInterceptor) and this call's timeouts, which application interceptors can change
    with ``with_read_timeout(s)`` and friends."""

    __slots__ = (
        "call",
        "interceptors",
        "index",
        "request",
        "exchange",
        "connect_timeout",
        "read_timeout",
        "write_timeout",
        "calls",
        "follow_redirects",
    )

    def __init__(
        self,
        call: RealCall,
        interceptors: list,
        index: int,
        request: Request,
        exchange: Exchange | None,
        connect_timeout: float,
        read_timeout: float,
        write_timeout: float,
        follow_redirects: int,
    ) -> None:
        self.call = call
        self.interceptors = interceptors
        self.index = index
        self.request = request
        self.exchange = exchange
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.calls = 0
        self.follow_redirects = follow_redirects

    def copy(self, index: int, request: Request, exchange: Exchange | None) -> RealInterceptorChain:
        chain = RealInterceptorChain.__new__(RealInterceptorChain)
        chain.call = self.call
        chain.interceptors = self.interceptors
        chain.index = index
        chain.request = request
        chain.exchange = exchange
        chain.connect_timeout = self.connect_timeout
        chain.read_timeout = self.read_timeout
        chain.write_timeout = self.write_timeout
        chain.calls = 0
        chain.follow_redirects = self.follow_redirects
        return chain

    def proceed(self, request: Request) -> Response:
        """Hand ``request`` to the next interceptor and return its response."""
        interceptors = self.interceptors
        index = self.index
        if index >= len(interceptors):
            raise RuntimeError("proceed() called past the end of the interceptor chain")
        self.calls += 1
        exchange = self.exchange
        if exchange is not None:
            previous = interceptors[index - 1]
            if self.calls > 1:
                raise RuntimeError(f"network interceptor {previous!r} must call proceed() exactly once")
            url = request.url
            current = exchange.connection.address
            if url.host != current.host or url.port != current.port:
                raise RuntimeError(f"network interceptor {previous!r} must retain the same host and port")
        nxt = self.copy(index + 1, request, exchange)
        interceptor = interceptors[index]
        # built-in interceptors are called directly (C calls in the compiled build); others by protocol
        kind = type(interceptor)
        if kind is BridgeInterceptor:
            bridge = interceptor
            response = bridge.intercept(nxt)
        elif kind is ConnectInterceptor:
            connect = interceptor
            response = connect.intercept(nxt)
        elif kind is CallServerInterceptor:
            call_server = interceptor
            response = call_server.intercept(nxt)
        elif kind is RetryAndFollowUpInterceptor:
            retry = interceptor
            response = retry.intercept(nxt)
        else:
            response = interceptor.intercept(nxt)
        if response is None:
            raise RuntimeError(f"interceptor {interceptor!r} returned None")
        if exchange is not None and index + 1 < len(interceptors) and nxt.calls != 1:
            raise RuntimeError(f"network interceptor {interceptor!r} must call proceed() exactly once")
        return response

    @property
    def connection(self) -> RealConnection | None:
        exchange = self.exchange
        return exchange.connection if exchange is not None else None

    def _adjust(self, name: str, seconds: float | None) -> RealInterceptorChain:
        if self.exchange is not None:
            raise RuntimeError("Timeouts can't be adjusted in a network interceptor")
        value = _timeout_value(name, seconds)
        chain = self.copy(self.index, self.request, None)
        if name == "connect_timeout":
            chain.connect_timeout = value
        elif name == "read_timeout":
            chain.read_timeout = value
        else:
            chain.write_timeout = value
        return chain

    def with_connect_timeout(self, seconds: float | None) -> RealInterceptorChain:
        return self._adjust("connect_timeout", seconds)

    def with_read_timeout(self, seconds: float | None) -> RealInterceptorChain:
        return self._adjust("read_timeout", seconds)

    def with_write_timeout(self, seconds: float | None) -> RealInterceptorChain:
        return self._adjust("write_timeout", seconds)

    def with_follow_redirects(self, follow: bool) -> RealInterceptorChain:
        """A chain whose calls follow redirects (or not) whatever the client's setting is."""
        if self.exchange is not None:
            raise RuntimeError("follow_redirects can't be adjusted in a network interceptor")
        chain = self.copy(self.index, self.request, None)
        chain.follow_redirects = 1 if follow else 0
        return chain

    def __repr__(self) -> str:
        return f"<Chain {self.index} {self.request!r}>"


def _timeout_value(name: str, seconds: Any) -> float:
    if seconds is None:
        return 0.0
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(seconds).__name__}")
    if seconds != seconds or seconds < 0:
        raise ValueError(f"{name} must be >= 0 (or None for no timeout), not {seconds!r}")
    if seconds > 2147483.647:
        raise ValueError(f"{name} too large: {seconds!r} seconds")
    return float(seconds)


class RetryAndFollowUpInterceptor:
    """Retries failures that are safe to retry and follows redirects, auth challenges and 408/503.

    The loop: proceed; on a network failure ask ``recover()``; on a response ask
    ``follow_up_request()``; at most ``max_follow_ups`` follow-ups. See fastnet._internal.follow_up.
    """

    __slots__ = ("client",)

    def __init__(self, client: ClientCore) -> None:
        self.client = client

    def intercept(self, chain: RealInterceptorChain) -> Response:
        request = chain.request
        call = chain.call
        client = self.client
        follow_ups = 0
        prior = None
        recovered = None
        call.finder = None  # a new hop plans its routes afresh; only failure recovery keeps the planner
        while True:
            if call.canceled:
                raise call.canceled_error(request)
            try:
                response = chain.proceed(request)
            except NetworkError as exc:
                retry = self.recover(exc, call, request, chain)
                if call.events is not None:
                    call.events.retry_decision(call, exc, retry)
                if not retry:
                    if recovered:
                        exc.recovered.extend(recovered)
                    raise
                if recovered is None:
                    recovered = []
                recovered.append(exc)
                continue
            if prior is not None:
                response.prior_response = prior
            if response.status_code not in _FOLLOW_UP_CODES:
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                return response
            from fastnet._internal.follow_up import follow_up_request

            try:
                follow_up = follow_up_request(client, call, chain, response)
            except BaseException:
                response.close()
                raise
            if follow_up is not None:
                body = follow_up.body
                if body is not None and body.one_shot:
                    follow_up = None  # a one-shot body cannot be sent again: return this response
            if follow_up is None:
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                return response
            follow_ups += 1
            if follow_ups > client.max_follow_ups:
                response.close()
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                err = ProtocolError(f"Too many follow-up requests: {follow_ups}", url=request.url)
                if recovered:
                    err.recovered.extend(recovered)
                raise err
            if call.events is not None:
                call.events.follow_up_decision(call, response, follow_up)
            prior = response._stripped()
            call.finder = None
            request = follow_up

    def recover(
        self, exc: NetworkError, call: RealCall, request: Request, chain: RealInterceptorChain
    ) -> bool:
        """Whether a failure may be retried (seed 001 §2.2, reference §10.2), in this order."""
        if not self.client.retry_on_connection_failure:
            return False
        if call.canceled:
            return False
        failure = call.last_failure
        call.last_failure = None
        if failure is None:
            return False  # the failure did not happen on an exchange's I/O (connect errors, user code)
        body = request.body
        if body is not None and body.one_shot:
            return False
        if isinstance(exc, ProtocolError):
            return False
        if isinstance(exc, TimeoutError):
            return False
        if isinstance(exc, TlsVerificationError):
            return False
        connection, was_fresh = failure
        if not was_fresh:
            return True  # a stale pooled connection: a fresh connection for the same route exists
        finder = call.finder
        return finder is not None and finder.has_more_routes()


class BridgeInterceptor:
    """Turns the user's request into a network request (Host, Content-Length or chunked, Connection,
    Accept-Encoding, Cookie, User-Agent) and the network response into a user response (transparent
    gzip, Set-Cookie to the jar). Default header blocks are built once per host and cached."""

    __slots__ = ("client", "defaults")

    def __init__(self, client: ClientCore) -> None:
        self.client = client
        self.defaults = {}

    def default_headers(self, url: URL) -> Headers:
        key = url.host_header
        headers = self.defaults.get(key)
        if headers is None:
            if len(self.defaults) > 1024:
                self.defaults.clear()
            headers = _headers_from_list(
                [
                    ("Host", key),
                    ("User-Agent", self.client.user_agent),
                    ("Accept-Encoding", "gzip"),
                    ("Connection", "keep-alive"),
                ]
            )
            headers.to_wire()
            headers._heads = {}  # CallServer caches whole request heads built on this block
            self.defaults[key] = headers
        return headers

    def intercept(self, chain: RealInterceptorChain) -> Response:
        request = chain.request
        user = request.headers
        body = request.body
        client = self.client
        jar = client.cookie_jar
        cookies = None
        if jar is not None:
            cookies = jar.load_for(request.url)
        if not user._items and body is None and not cookies and request.method not in _EMPTY_BODY_LENGTH:
            network_headers = self.default_headers(request.url)
            gzip_added = True
        else:
            network_headers, gzip_added = self.build_headers(request, cookies)
        network_request = request if network_headers is user else request.with_headers(network_headers)
        response = chain.proceed(network_request)
        if jar is not None:
            set_cookies = response.headers.get_all("set-cookie")
            if set_cookies:
                _save_cookies(jar, request.url, set_cookies)
        exchange = response._exchange
        if gzip_added and exchange is not None and exchange.content_encoding == "gzip":
            if exchange.body_mode != BODY_NONE:
                exchange.decompressor = zlib.decompressobj(31)
                response.network_response = _copy_head(response)
                response.headers = response.headers.remove("content-encoding").remove("content-length")
        response.request = request
        return response

    def build_headers(self, request: Request, cookies: Any) -> Any:
        user = request.headers
        body = request.body
        items = list(user._items)
        lookup = user._lookup()
        if body is not None:
            ctype = body.content_type
            if ctype is not None and "content-type" not in lookup:
                items.append(("Content-Type", ctype))
            if body.length >= 0:
                items = [p for p in items if p[0].lower() not in ("content-length", "transfer-encoding")]
                items.append(("Content-Length", str(body.length)))
            elif "content-length" not in lookup:
                items = [p for p in items if p[0].lower() != "transfer-encoding"]
                items.append(("Transfer-Encoding", "chunked"))
        elif request.method in _EMPTY_BODY_LENGTH and "content-length" not in lookup:
            items.append(("Content-Length", "0"))
        if "host" not in lookup:
            items.insert(0, ("Host", request.url.host_header))
        if "connection" not in lookup:
            items.append(("Connection", "keep-alive"))
        gzip_added = False
        if "accept-encoding" not in lookup and "range" not in lookup:
            items.append(("Accept-Encoding", "gzip"))
            gzip_added = True
        if cookies:
            from fastnet.cookies import cookie_header

            items = [p for p in items if p[0].lower() != "cookie"]
            items.append(("Cookie", cookie_header(cookies)))
        if "user-agent" not in lookup:
            items.append(("User-Agent", self.client.user_agent))
        return _headers_from_list(items), gzip_added


def _save_cookies(jar: Any, url: URL, values: list) -> None:
    from fastnet.cookies import parse_set_cookie

    cookies = []
    for value in values:
        cookie = parse_set_cookie(value, url)
        if cookie is not None:
            cookies.append(cookie)
    if cookies:
        jar.save_from_response(url, cookies)


def _copy_head(response: Response) -> Response:
    copy = Response(
        response.status_code, response.headers, b"", response.request, response.reason, response.protocol
    )
    copy._unreadable = True
    return copy


class ConnectInterceptor:
    """Finds a connection for the request (pool first, then a new route) and opens an exchange on it."""

    __slots__ = ("client",)

    def __init__(self, client: ClientCore) -> None:
        self.client = client

    def intercept(self, chain: RealInterceptorChain) -> Response:
        call = chain.call
        request = chain.request
        connection = self.client.acquire_connection(call, request, chain)
        exchange = _new_exchange(call, connection)
        exchange.request = request
        call.exchange = exchange
        connection.set_timeouts(chain.read_timeout, chain.write_timeout)
        return chain.copy(chain.index, request, exchange).proceed(request)


class CallServerInterceptor:
    """Writes the request, reads the response head and returns a response whose body streams."""

    __slots__ = ()

    def request_head(self, request: Request, conn: RealConnection) -> bytes:
        headers = request.headers
        url = request.url
        heads = headers._heads
        if heads is not None and not conn.http_proxy:
            # a Bridge default header block: its whole request head is cached per method and target
            key = request.method + url.target
            head = heads.get(key)
            if head is None:
                head = b"%s %s HTTP/1.1\r\n%b\r\n" % (
                    request.method.encode("ascii"),
                    url.target.encode("ascii"),
                    headers.to_wire(),
                )
                if len(heads) < 512:
                    heads[key] = head
            return head
        if conn.http_proxy and not url.is_https:
            # absolute-form through an HTTP proxy, with the proxy's own credentials when it has them
            target = f"{url.scheme}://{url.host_header}{url.target}"
            auth = conn.proxy_authorization
            if auth is not None and "proxy-authorization" not in headers._lookup():
                headers = headers.add("Proxy-Authorization", auth)
        else:
            # never hand proxy credentials to an origin (through a tunnel, SOCKS or directly)
            target = url.target
            if "proxy-authorization" in headers._lookup():
                headers = headers.remove("proxy-authorization")
        return b"%s %s HTTP/1.1\r\n%b\r\n" % (
            request.method.encode("ascii"),
            target.encode("ascii"),
            headers.to_wire(),
        )

    def intercept(self, chain: RealInterceptorChain) -> Response:
        exchange = chain.exchange
        call = chain.call
        request = chain.request
        conn = exchange.connection
        exchange.request = request
        head_request = request.method == "HEAD"
        exchange.head_request = head_request
        head = self.request_head(request, conn)
        body = request.body
        expect_continue = False
        if body is not None:
            expect = request.headers.get("expect") if request.headers._items else None
            expect_continue = expect is not None and expect.lower() == "100-continue"
        try:
            early = exchange.write_request(head, body, expect_continue)
            parsed = early if early is not None else exchange.read_head(head_request)
        except NetworkError as exc:
            call.exchange_failed(exc, exchange)
            raise
        except BaseException:
            conn.no_new_exchanges = True
            exchange.finish(False)
            raise
        if early is not None:
            conn.no_new_exchanges = True
        status, reason, version, header_list, body_mode, length, keep_alive, encoding = parsed
        if body_mode == BODY_LENGTH and status in (204, 205) and length > 0:
            err = ProtocolError(f"HTTP {status} had non-zero Content-Length: {length}", url=request.url)
            call.exchange_failed(err, exchange)
            raise err
        response = Response.__new__(Response)
        response.status_code = status
        response.reason = reason
        response.headers = _headers_from_list(header_list)
        response.request = request
        response.protocol = "HTTP/1.0" if version == "1.0" else "HTTP/1.1"
        response.prior_response = None
        response._content = b""
        response._unreadable = False
        response._closed = False
        response.network_response = None
        response.route = conn.route
        exchange.body_mode = body_mode
        exchange.content_encoding = encoding
        if keep_alive and request.headers._items:
            # "Connection: close" in the request ends the connection as surely as in the response
            connection = request.headers._lookup().get("connection")
            if connection is not None and "close" in [t.strip() for t in connection.lower().split(",")]:
                keep_alive = False
        exchange.keep_alive = keep_alive and conn.no_new_exchanges is False
        events = call.events
        if events is not None:
            events.response_headers_start(call)
            events.response_headers_end(call, response)
        if body_mode == BODY_NONE:
            response._exchange = None
            exchange.finish(True)
        else:
            if status == 101:
                conn.no_new_exchanges = True
            response._exchange = exchange
            if events is not None:
                events.response_body_start(call)
        return response


# ------------------------------------------------------------------------------------------------
# Call
# ------------------------------------------------------------------------------------------------


class RealCall:
    """One request's lifetime: ``execute()`` once, ``cancel()`` from any thread."""

    __slots__ = (
        "client",
        "request",
        "events",
        "executed",
        "canceled",
        "timed_out",
        "connection",
        "exchange",
        "finder",
        "last_failure",
        "deadline",
        "finished",
        "returned",
        "wakeup",
        "__weakref__",
    )

    def __init__(self, client: ClientCore, request: Request) -> None:
        _init_call(self, client, request)

    @property
    def is_executed(self) -> bool:
        return self.executed

    @property
    def is_canceled(self) -> bool:
        return self.canceled

    def execute(self) -> Response:
        """Run the call through the interceptor chain; returns a response whose body may stream."""
        if self.executed:
            raise RuntimeError("Already Executed")
        self.executed = True
        client = self.client
        events = self.events
        if client.call_timeout > 0:
            self.deadline = time.monotonic() + client.call_timeout
            client.watchdog().watch(self)
        if events is not None:
            events.call_start(self)
        request = self.request
        try:
            if self.canceled:
                raise self.canceled_error(request)
            chain = RealInterceptorChain.__new__(RealInterceptorChain)
            chain.call = self
            chain.interceptors = client.interceptors
            chain.index = 0
            chain.request = request
            chain.exchange = None
            chain.connect_timeout = client.connect_timeout
            chain.read_timeout = client.read_timeout
            chain.write_timeout = client.write_timeout
            chain.calls = 0
            chain.follow_redirects = -1
            response = chain.proceed(request)
            if self.canceled:
                response.close()
                raise self.canceled_error(request)
        except BaseException as exc:
            self.fail(exc)
            if isinstance(exc, NetworkError):
                if self.canceled and not isinstance(exc, (CanceledError, CallTimeout, PoolTimeout)):
                    raise self.canceled_error(request) from exc
                exc._locate(request.url, None)
            raise
        self.returned = True
        if response._exchange is None:
            self.end()
        return response

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (for backoff); ``cancel()`` and the call timeout cut it short with an error."""
        if self.canceled:
            raise self.canceled_error(self.request)
        if seconds > 0:
            if self.deadline > 0 and time.monotonic() + seconds > self.deadline:
                seconds = max(0.0, self.deadline - time.monotonic()) + 0.05
            wakeup = self.wakeup
            if wakeup is None:
                wakeup = self.wakeup = threading.Event()
            if self.canceled:
                raise self.canceled_error(self.request)
            wakeup.wait(seconds)
        if self.canceled:
            raise self.canceled_error(self.request)

    def canceled_error(self, request: Request) -> NetworkError:
        if self.timed_out:
            return CallTimeout("call timeout", url=request.url)
        return CanceledError("Canceled", url=request.url)

    def cancel(self) -> None:
        """Cancel the call: closes its socket so a blocked read or write fails with CanceledError."""
        if self.canceled:
            return
        self.canceled = True
        wakeup = self.wakeup
        if wakeup is not None:
            wakeup.set()
        if self.events is not None:
            self.events.canceled(self)
        conn = self.connection
        if conn is not None:
            conn.shutdown()
        finder = self.finder
        if finder is not None:
            finder.cancel()

    def exchange_failed(self, exc: NetworkError, exchange: Exchange) -> None:
        """An I/O failure on an exchange: the connection is done for; remember it for recover()."""
        conn = exchange.connection
        was_fresh = conn.exchange_count == 0
        conn.no_new_exchanges = True
        if self.events is not None:
            self.events.response_failed(self, exc)
        if was_fresh:
            self.client.route_failed(self, conn, exc)
        self.last_failure = (conn, was_fresh)
        exchange.done = True
        self.release_connection(conn, False)

    def body_failed(self, exc: NetworkError) -> None:
        if self.events is not None:
            self.events.response_failed(self, exc)
        self.fail(exc)

    def release_connection(self, conn: RealConnection, reusable: bool) -> None:
        if self.connection is conn:
            self.connection = None
        if self.events is not None:
            self.events.connection_released(self, conn)
        self.client.pool.release(conn, reusable)
        if self.exchange is not None and self.exchange.connection is conn:
            self.exchange = None
        if self.returned:
            self.end()

    def end(self) -> None:
        self.finder = None  # the finder points back at this call: no cycle left for the collector
        if self.finished:
            return
        self.finished = True
        if self.deadline > 0:
            self.deadline = -1.0
        if self.events is not None:
            self.events.call_end(self)

    def fail(self, exc: BaseException) -> None:
        self.finder = None
        conn = self.connection
        if conn is not None:
            self.connection = None
            conn.no_new_exchanges = True
            self.client.pool.release(conn, False)
        if self.finished:
            return
        self.finished = True
        if self.deadline > 0:
            self.deadline = -1.0
        if self.events is not None:
            self.events.call_failed(self, exc)

    def clone(self) -> RealCall:
        return RealCall(self.client, self.request)

    def __repr__(self) -> str:
        return f"<Call {self.request.method} {self.request.url.redacted()}>"


def _init_call(call: RealCall, client: ClientCore, request: Request) -> None:
    call.client = client
    call.request = request
    call.executed = False
    call.canceled = False
    call.timed_out = False
    call.connection = None
    call.exchange = None
    call.finder = None
    call.last_failure = None
    call.deadline = 0.0
    call.finished = False
    call.returned = False
    call.wakeup = None
    call.events = client.new_events(call)


def _new_call(client: ClientCore, request: Request) -> RealCall:
    """A RealCall without ``__init__`` argument parsing (the per-request path)."""
    call = RealCall.__new__(RealCall)
    _init_call(call, client, request)
    return call


# ------------------------------------------------------------------------------------------------
# ClientCore: the typed half of Client
# ------------------------------------------------------------------------------------------------


class ClientCore:
    """Configuration and shared state read on every request; ``fastnet.Client`` wraps it."""

    __slots__ = (
        "connect_timeout",
        "read_timeout",
        "write_timeout",
        "call_timeout",
        "follow_redirects",
        "follow_ssl_redirects",
        "retry_on_connection_failure",
        "max_follow_ups",
        "interceptors",
        "pool",
        "cookie_jar",
        "event_listener",
        "event_listener_factory",
        "user_agent",
        "connector",
        "addresses",
        "authenticator",
        "proxy_authenticator",
        "sensitive_headers",
        "_watchdog",
        "__weakref__",
    )

    def __init__(self) -> None:
        self.connect_timeout = 10.0
        self.read_timeout = 10.0
        self.write_timeout = 10.0
        self.call_timeout = 0.0
        self.follow_redirects = True
        self.follow_ssl_redirects = True
        self.retry_on_connection_failure = True
        self.max_follow_ups = MAX_FOLLOW_UPS
        self.interceptors = []
        self.pool = None
        self.cookie_jar = None
        self.event_listener = None
        self.event_listener_factory = None
        self.user_agent = USER_AGENT
        self.connector = None
        self.addresses = {}
        self.authenticator = None
        self.proxy_authenticator = None
        self.sensitive_headers = frozenset()
        self._watchdog = None

    def new_events(self, call: RealCall) -> Any:
        factory = self.event_listener_factory
        if factory is not None:
            return factory(call)
        return self.event_listener

    def request(
        self,
        method: str,
        url: Any,
        headers: Any,
        body: Any,
        json: Any,
        stream: bool,
        proxy: Any,
    ) -> Response:
        if headers is None and body is None and json is None and method in _KNOWN_METHODS:
            cached = _URL_CACHE.get(url) if isinstance(url, str) else None
            if cached is None:
                cached = url if isinstance(url, URL) else URL(url)
            request = _make_request(method, cached, _EMPTY_HEADERS, None, proxy, None)
        else:
            request = Request(method, url, headers, body, json, proxy)
        call = _new_call(self, request)
        response = call.execute()
        if not stream and response._exchange is not None:
            try:
                response.read()
            except BaseException:
                response.close()
                raise
        return response

    def get(self, url: Any, headers: Any = None, proxy: Any = None) -> Response:
        """``Client.get`` without a Python frame in between (the client binds this method)."""
        return self.request("GET", url, headers, None, None, False, proxy)

    def acquire_connection(
        self, call: RealCall, request: Request, chain: RealInterceptorChain
    ) -> RealConnection:
        url = request.url
        proxy = request.proxy
        key = url.origin_key if proxy is None else (url.origin_key, proxy)
        address = self.addresses.get(key)
        if address is None:
            address = self.connector.address_for(url, proxy)
            if len(self.addresses) > 4096:
                self.addresses.clear()
            self.addresses[key] = address
        pool = self.pool
        while True:
            now = _monotonic()
            conn = pool.acquire(address, now)
            if conn is None:
                if pool.max_per_host > 0 and pool.wait_for_slot(address, call.deadline):
                    continue  # a call released a connection to this address while we waited
                break
            if now - conn.idle_at < PROBE_IDLE_AFTER or conn.is_healthy():
                break
            pool.release(conn, False)
        if conn is None:
            conn = self.connector.connect(self, call, address, chain)
        call.connection = conn
        if call.canceled:
            conn.shutdown()
        if call.events is not None:
            call.events.connection_acquired(call, conn)
        return conn

    def route_failed(self, call: RealCall, conn: RealConnection, exc: BaseException) -> None:
        self.connector.route_failed(call, conn, exc)

    def watchdog(self) -> Any:
        dog = self._watchdog
        if dog is None:
            dog = self._watchdog = _watchdog()
        return dog


_WATCHDOG = None
_WATCHDOG_LOCK = threading.Lock()


def _watchdog() -> Any:
    global _WATCHDOG
    with _WATCHDOG_LOCK:
        if _WATCHDOG is None:
            from fastnet._internal.watchdog import Watchdog

            _WATCHDOG = Watchdog()
        return _WATCHDOG
