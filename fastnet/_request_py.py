"""``Request`` and ``RequestBody``: an immutable HTTP request and a body that knows its length.

Pure-Python twin of the compiled ``_request_c`` (typed by ``_request_c.pxd``); import both through
``fastnet.request``. ``make_request`` builds a Request from parts that are already checked, without
``__init__``'s argument parsing: the per-request path and ``replace()`` use it.
"""

from __future__ import annotations

import json as _json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Union

from fastnet.headers import EMPTY_HEADERS, Headers, HeadersLike, as_headers
from fastnet.headers import TCHAR as _TCHAR
from fastnet.url import URL
from fastnet.url import _cache as _URL_CACHE

if TYPE_CHECKING:
    from fastnet.proxy import Proxy

__all__ = ["KNOWN_METHODS", "BodyLike", "Request", "RequestBody", "check_method", "make_request"]

#: What ``body=`` accepts: bytes-like or str (replayable), a file object, or an iterable of bytes.
BodyLike = Union[
    bytes,
    bytearray,
    memoryview,
    str,
    IO[bytes],
    IO[str],
    Iterable[bytes],
    AsyncIterable[bytes],
    "RequestBody",
]

KIND_BYTES = 0
KIND_FILE = 1
KIND_STREAM = 2
KIND_ITERABLE = 3
KIND_ASYNC_STREAM = 4
KIND_ASYNC_ITERABLE = 5


class RequestBody:
    """A request body that knows its length and whether it can be sent more than once.

    ``bytes``/``str`` bodies are replayable; a seekable file is rewound for each attempt; an iterable
    that is not an iterator (a list of chunks, or any object whose ``__iter__`` starts afresh) is
    iterated anew for each attempt; a non-seekable file or an iterator (a generator) is *one-shot*: it is
    never replayed by a retry or a redirect, which return the response instead. Length ``-1`` means
    unknown (sent chunked). The asyncio client also takes an async iterable (``async def`` generator:
    one-shot; an object whose ``__aiter__`` starts afresh: replayable); a file is read with blocking
    calls there too.

    >>> RequestBody(b"abc").length, RequestBody(iter([b"a"])).one_shot, RequestBody([b"a"]).one_shot
    (3, True, False)
    """

    __slots__ = ("_data", "_kind", "length", "content_type", "one_shot", "_start", "_used")
    # bytes (KIND_BYTES), a file object (KIND_FILE), an iterator of bytes (KIND_STREAM), an iterable
    # iterated afresh per attempt (KIND_ITERABLE), or their async forms (KIND_ASYNC_STREAM/ITERABLE)
    _data: Any
    _kind: int
    length: int
    content_type: str | None
    one_shot: bool
    _start: int
    _used: bool

    def __init__(
        self, data: BodyLike, content_type: str | None = None, *, one_shot: bool | None = None
    ) -> None:
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
            file: Any = data
            self._data = file
            self._kind = KIND_FILE
            seekable = False
            try:
                seekable = bool(file.seekable())
            except (AttributeError, OSError, ValueError):
                seekable = False
            if seekable:
                self._start = file.tell()
                end = file.seek(0, 2)
                file.seek(self._start)
                self.length = end - self._start
                self.one_shot = bool(one_shot)
            else:
                self.length = -1
                self.one_shot = True if one_shot is None else bool(one_shot)
            return
        if hasattr(data, "__aiter__"):
            self.length = -1
            if data.__aiter__() is data:  # an async iterator: it can be consumed once
                self._data = data
                self._kind = KIND_ASYNC_STREAM
                self.one_shot = True if one_shot is None else bool(one_shot)
            else:
                self._data = data
                self._kind = KIND_ASYNC_ITERABLE
                self.one_shot = bool(one_shot)
            return
        if hasattr(data, "__iter__") or hasattr(data, "__next__"):
            stream = iter(data)
            self.length = -1
            if stream is data or not hasattr(data, "__iter__"):
                self._data = stream  # an iterator: it can be consumed once
                self._kind = KIND_STREAM
                self.one_shot = True if one_shot is None else bool(one_shot)
            else:
                self._data = data  # a re-iterable (a list, say): iterated afresh for each attempt
                self._kind = KIND_ITERABLE
                self.one_shot = bool(one_shot)
            return
        raise TypeError(
            f"request body must be bytes, str, a file object or an (async) iterator of bytes, "
            f"not {type(data).__name__}"
        )

    @property
    def content(self) -> bytes | None:
        """The bytes of an in-memory body, else None."""
        data: bytes | None = self._data if self._kind == KIND_BYTES else None
        return data

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as an iterator; a seekable file is rewound first. One-shot bodies once only."""
        if self._kind == KIND_BYTES:
            return iter((self._data,))
        if self._kind >= KIND_ASYNC_STREAM:
            raise TypeError("an async iterable request body can only be sent by fastnet.AsyncClient")
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
        if self._kind == KIND_ITERABLE:
            fresh: Iterator[bytes] = iter(self._data)
            return fresh
        stream: Iterator[bytes] = self._data
        return stream

    async def achunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as an async iterator (what the asyncio client sends); the same rules."""
        kind = self._kind
        if kind < KIND_ASYNC_STREAM:
            for chunk in self.chunks():
                yield chunk
            return
        if self.one_shot:
            if self._used:
                raise RuntimeError("a one-shot request body cannot be sent twice")
            self._used = True
        async for chunk in self._data:
            yield chunk

    @property
    def used(self) -> bool:
        return self._used


def _file_chunks(f: Any) -> Iterator[bytes]:
    while True:
        block = f.read(65536)
        if not block:
            return
        if isinstance(block, str):
            block = block.encode("utf-8")
        yield block


KNOWN_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"))


def check_method(method: Any) -> str:
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    if not method:
        raise ValueError("Invalid HTTP method ''")
    for c in method:
        if c not in _TCHAR:
            raise ValueError(f"Invalid HTTP method {method!r}")
    upper = method.upper()
    return upper if upper in KNOWN_METHODS else method


class Request:
    """An immutable HTTP request. ``replace(**changes)`` makes a modified copy.

    >>> r = Request("POST", "http://127.0.0.1:8080/items", headers={"X-Trace": "1"}, json={"a": 1})
    >>> r.method, str(r.url), r.headers["content-type"]
    ('POST', 'http://127.0.0.1:8080/items', 'application/json')

    ``body`` accepts ``bytes``, ``str``, a file object, an iterator of bytes or a ``RequestBody``;
    ``json=`` serialises a value. ``proxy=`` overrides the client's proxy for this request only.
    """

    __slots__ = ("method", "url", "headers", "body", "proxy", "tag")
    method: str
    url: URL
    headers: Headers
    body: RequestBody | None
    proxy: Proxy | None
    tag: object

    def __init__(
        self,
        method: str,
        url: str | URL,
        headers: HeadersLike | None = None,
        body: BodyLike | None = None,
        json: Any = None,
        proxy: Proxy | None = None,
        tag: object = None,
    ) -> None:
        if method not in KNOWN_METHODS:
            method = check_method(method)
        self.method = method
        if isinstance(url, URL):
            self.url = url
        else:
            cached = _URL_CACHE.get(url) if isinstance(url, str) else None
            self.url = cached if cached is not None else URL(url)
        hdrs = EMPTY_HEADERS if headers is None else as_headers(headers)
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
                method = value if value in KNOWN_METHODS else check_method(value)
            elif key == "url":
                url = value if isinstance(value, URL) else URL(value)
            elif key == "headers":
                headers = as_headers(value)
            elif key == "body":
                body = value if value is None or isinstance(value, RequestBody) else RequestBody(value)
            elif key == "proxy":
                proxy = value
            elif key == "tag":
                tag = value
            else:
                raise TypeError(f"Request.replace() got an unexpected keyword argument {key!r}")
        return make_request(method, url, headers, body, proxy, tag)

    def with_headers(self, headers: Headers) -> Request:
        """A copy with other (already validated) headers: the Bridge's fast path."""
        return make_request(self.method, self.url, headers, self.body, self.proxy, self.tag)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.url.redacted()}>"


def make_request(
    method: str, url: URL, headers: Headers, body: RequestBody | None, proxy: Proxy | None, tag: object
) -> Request:
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
    Request.__setattr__ = _set_once  # type: ignore[method-assign]
