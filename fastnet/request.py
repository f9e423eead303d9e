"""``Request`` and ``RequestBody``: an immutable HTTP request and a body that knows its length.

Compiled in place, typed by its ``.pxd``, in the compiled build. ``make_request`` builds a Request from parts
that are already checked, without ``__init__``'s argument parsing: the per-request path and ``replace()`` use
it.

``Request(...)`` also takes what requests and httpx users pass (``params``, ``data``, ``files``, ``auth``,
``cookies``, ``timeout``, ``follow_redirects``) and turns each into what OkHttp keeps on a request: the URL's
query, a body (``FormBody``/``MultipartBody``), headers (``Authorization``, ``Cookie``), and the call
settings the client reads when the call is made (``timeout``, ``follow_redirects``, an ``Authenticator``).
Credentials in the URL (``http://user:pw@host/``) become a Basic ``Authorization`` header and leave the URL.
"""

from __future__ import annotations

import base64
import json as _json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Union

from fastnet.cookies import cookie_pairs_header
from fastnet.forms import MultipartBody, encode_pairs
from fastnet.headers import EMPTY_HEADERS, Headers, HeadersLike, as_headers
from fastnet.headers import TCHAR as _TCHAR
from fastnet.proxy import Proxy
from fastnet.timeout import USE_CLIENT_DEFAULT, as_timeout
from fastnet.url import URL
from fastnet.url import _cache as _URL_CACHE

if TYPE_CHECKING:
    from typing import TypeAlias

    from typing_extensions import TypeIs

    from fastnet.authenticator import AuthenticatorLike
    from fastnet.cookies import Cookie
    from fastnet.forms import FilesLike, PairsLike, ParamsLike
    from fastnet.timeout import Timeout, TimeoutTypes, UseClientDefault

    #: ``cookies=``: a mapping or ``(name, value)`` pairs, or a jar's ``Cookie`` objects.
    CookiesLike: TypeAlias = "Mapping[str, str] | Iterable[tuple[str, str] | Cookie]"
    #: What the call takes from a request: ``(timeout, follow_redirects, authenticator)``.
    CallOptions: TypeAlias = "tuple[Timeout | UseClientDefault, bool | None, AuthenticatorLike | None]"

__all__ = [
    "KNOWN_METHODS",
    "BodyLike",
    "Request",
    "RequestBody",
    "basic_authorization",
    "check_method",
    "make_request",
    "proxy_from_url",
    "with_query",
]

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
        self,
        data: BodyLike,
        content_type: str | None = None,
        *,
        one_shot: bool | None = None,
        length: int | None = None,
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
            file: IO[bytes] | IO[str] = data  # type: ignore[assignment]  # it has read(): a file
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
            if length is not None:
                if isinstance(length, bool) or not isinstance(length, int) or length < 0:
                    raise ValueError(f"length must be a number of bytes >= 0, not {length!r}")
                self.length = length  # the iterable promises exactly this many bytes (checked as sent)
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


def _file_chunks(f: IO[bytes] | IO[str]) -> Iterator[bytes]:
    while True:
        block = f.read(65536)
        if not block:
            return
        if isinstance(block, str):
            block = block.encode("utf-8")
        yield block


KNOWN_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"))


def check_method(method: object) -> str:
    if type(method) is not str:
        if not isinstance(method, str):
            raise TypeError(f"method must be a str, not {type(method).__name__}")
        method = str.__str__(method)  # a str subclass (an enum.StrEnum member): its characters
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
    >>> str(Request("GET", "http://h/search?q=1", params={"page": 2}).url)
    'http://h/search?q=1&page=2'

    ``body`` accepts ``bytes``, ``str``, a file object, an iterator of bytes or a ``RequestBody``;
    ``json=`` serialises a value. ``proxy=`` (a ``Proxy`` or a proxy URL) overrides the client's proxy for
    this request only. The keyword-only options are requests' and httpx's: ``params`` (added to the URL's
    query, repeated keys kept), ``data`` (a mapping or pairs: a form; else a body), ``files`` (multipart,
    streamed), ``auth`` (``(user, password)``: a Basic ``Authorization`` header; an ``Authenticator``:
    answers this call's 401s), ``cookies`` (a ``Cookie`` header for this request), ``timeout`` (a number,
    a ``(connect, read)`` pair, a ``fastnet.Timeout`` or ``None`` for none) and ``follow_redirects``; the
    last three and an ``Authenticator`` are read by the client when it makes the call.
    """

    __slots__ = ("method", "url", "headers", "body", "proxy", "tag", "_options")
    method: str
    url: URL
    headers: Headers
    body: RequestBody | None
    proxy: Proxy | None
    tag: object
    # (timeout, follow_redirects, authenticator): what the call takes from this request, or None (unset
    # in the pure build's fast path: read it with getattr(request, "_options", None))
    _options: CallOptions | None

    def __init__(
        self,
        method: str,
        url: str | URL,
        headers: HeadersLike | None = None,
        body: BodyLike | None = None,
        json: object = None,
        proxy: Proxy | str | None = None,
        tag: object = None,
        *,
        params: ParamsLike | None = None,
        data: PairsLike | BodyLike | None = None,
        files: FilesLike | None = None,
        auth: tuple[str, str] | AuthenticatorLike | None = None,
        cookies: CookiesLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
    ) -> None:
        if type(method) is not str or method not in KNOWN_METHODS:
            method = check_method(method)
        self.method = method
        userinfo = True  # a URL with user-info is never in the parse cache
        if isinstance(url, URL):
            parsed = url
        else:
            cached = _URL_CACHE.get(url) if isinstance(url, str) else None
            if cached is not None:
                parsed = cached
                userinfo = False
            else:
                parsed = URL(url)
        hdrs = EMPTY_HEADERS if headers is None else as_headers(headers)
        if json is not None:
            if body is not None:
                raise ValueError("pass either body= or json=, not both")
            if data is not None or files is not None:
                raise ValueError("pass json= or data=/files=, not both")
            try:  # NaN and Infinity are no JSON (RFC 8259 §6): refused, as requests and httpx do
                text = _json.dumps(json, separators=(",", ":"), allow_nan=False)
            except ValueError as exc:
                raise ValueError(f"json=: {exc} (NaN and Infinity have no JSON form)") from None
            body = RequestBody(text.encode("utf-8"), "application/json")
            if "content-type" not in hdrs:
                hdrs = hdrs.add("Content-Type", "application/json")
        elif body is not None and not isinstance(body, RequestBody):
            body = RequestBody(body)
        options = None
        if (
            params is not None
            or data is not None
            or files is not None
            or auth is not None
            or cookies is not None
            or timeout is not USE_CLIENT_DEFAULT
            or follow_redirects is not None
            or (userinfo and (parsed.username or parsed.password))
        ):
            parsed, hdrs, body, options = _apply_options(
                parsed, hdrs, body, params, data, files, auth, cookies, timeout, follow_redirects
            )
        if proxy is not None and not isinstance(proxy, Proxy):
            proxy = proxy_from_url(proxy)
        self.url = parsed
        self.headers = hdrs
        self.body = body
        self.proxy = proxy
        self.tag = tag
        if options is not None:
            self._options = options

    @property
    def timeout(self) -> Timeout | UseClientDefault:
        """This request's ``timeout=`` as a ``fastnet.Timeout`` (``USE_CLIENT_DEFAULT`` when not given)."""
        options = getattr(self, "_options", None)
        return USE_CLIENT_DEFAULT if options is None else options[0]

    @property
    def follow_redirects(self) -> bool | None:
        """This request's ``follow_redirects=`` (None: the client's setting)."""
        options = getattr(self, "_options", None)
        return None if options is None else options[1]

    @property
    def authenticator(self) -> AuthenticatorLike | None:
        """The ``Authenticator`` given as this request's ``auth=`` (None: the client's)."""
        options = getattr(self, "_options", None)
        return None if options is None else options[2]

    def replace(self, **changes: Any) -> Request:
        """A copy with some fields changed: method, url, headers, body, proxy, tag (the call settings of
        ``timeout=``, ``follow_redirects=`` and ``auth=`` are kept)."""
        method = self.method
        url = self.url
        headers = self.headers
        body = self.body
        proxy = self.proxy
        tag = self.tag
        for key, value in changes.items():
            if key == "method":
                method = value if type(value) is str and value in KNOWN_METHODS else check_method(value)
            elif key == "url":
                url = value if isinstance(value, URL) else URL(value)
            elif key == "headers":
                headers = as_headers(value)
            elif key == "body":
                body = value if value is None or isinstance(value, RequestBody) else RequestBody(value)
            elif key == "proxy":
                proxy = value if value is None or isinstance(value, Proxy) else proxy_from_url(value)
            elif key == "tag":
                tag = value
            else:
                raise TypeError(f"Request.replace() got an unexpected keyword argument {key!r}")
        copy = make_request(method, url, headers, body, proxy, tag)
        options = getattr(self, "_options", None)
        if options is not None:
            copy._options = options
        return copy

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


def basic_authorization(user: str | bytes, password: str | bytes) -> str:
    """``Basic base64(user ":" password)`` in UTF-8 (RFC 7617), for ``auth=(user, password)``."""
    if isinstance(user, bytes):
        user = user.decode("utf-8")
    if isinstance(password, bytes):
        password = password.decode("utf-8")
    if not isinstance(user, str) or not isinstance(password, str):
        raise TypeError("auth=(user, password) takes two str")
    if ":" in user:
        raise ValueError("a Basic user-id cannot contain ':' (RFC 7617 §2)")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def with_query(url: URL, query: str) -> URL:
    """``url`` with ``query`` (already encoded) added after the query it has."""
    if not query:
        return url
    current = url.query
    return url.replace(query=query if not current else f"{current}&{query}")


_PROXIES: dict[str, Proxy] = {}


def proxy_from_url(value: object) -> Proxy:
    """A per-request ``proxy=`` given as a URL, parsed once (rotating through a list costs a dict lookup)."""
    if not isinstance(value, str):
        raise TypeError(f"proxy must be a fastnet.Proxy or a proxy URL, not {type(value).__name__}")
    proxy: Proxy | None = _PROXIES.get(value)
    if proxy is None:
        proxy = Proxy.from_url(value)
        if len(_PROXIES) >= 1024:
            _PROXIES.clear()
        _PROXIES[value] = proxy
    return proxy


def _is_pairs(value: object) -> TypeIs[PairsLike]:
    """A mapping, or a list/tuple of 2-item tuples: form fields rather than a body."""
    if isinstance(value, Mapping):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, tuple) and len(item) == 2 for item in value)
    return False


def _apply_options(
    url: URL,
    headers: Headers,
    body: RequestBody | None,
    params: ParamsLike | None,
    data: PairsLike | BodyLike | None,
    files: FilesLike | None,
    auth: tuple[str, str] | AuthenticatorLike | None,
    cookies: CookiesLike | None,
    timeout: TimeoutTypes | UseClientDefault,
    follow_redirects: object,
) -> tuple[URL, Headers, RequestBody | None, CallOptions | None]:
    """``Request(...)``'s keyword-only options applied: the URL, headers and body, and the call settings."""
    if params is not None:
        url = with_query(url, encode_pairs(params, "params"))
    if files is not None:
        if body is not None:
            raise ValueError("pass either body= or files=, not both")
        # with files=, data= must be form fields: MultipartBody refuses a body
        multipart = MultipartBody(data, files, boundary=_boundary_of(headers))  # type: ignore[arg-type]
        body = RequestBody(
            multipart,
            multipart.content_type,
            one_shot=multipart.one_shot,
            length=multipart.length if multipart.length >= 0 else None,
        )
        ctype = headers.get("content-type")
        if ctype is None or "boundary=" not in ctype:
            headers = headers.set("Content-Type", multipart.content_type)
    elif data is not None:
        if body is not None:
            raise ValueError("pass either body= or data=, not both")
        if _is_pairs(data):
            if data:
                form = encode_pairs(data, "data").encode("ascii")
                body = RequestBody(form, "application/x-www-form-urlencoded")
        else:
            body = data if isinstance(data, RequestBody) else RequestBody(data)
    authenticator = None
    if url.username or url.password:
        user, password = url.username, url.password
        url = url.replace(username="", password="")
        if auth is None and "authorization" not in headers:
            headers = headers.add("Authorization", basic_authorization(user, password))
    if auth is not None:
        if isinstance(auth, (tuple, list)):
            if len(auth) != 2:
                raise ValueError("auth must be a (user, password) pair or an Authenticator")
            headers = headers.set("Authorization", basic_authorization(auth[0], auth[1]))
        elif callable(getattr(auth, "authenticate", None)) or callable(auth):
            authenticator = auth
        else:
            raise TypeError(
                f"auth must be a (user, password) pair or an Authenticator, not {type(auth).__name__}"
            )
    if cookies is not None:
        value = cookie_pairs_header(cookies, url)
        if value:
            sent = headers.get("cookie")
            headers = headers.set("Cookie", f"{sent}; {value}" if sent else value)
    options = None
    if timeout is not USE_CLIENT_DEFAULT or follow_redirects is not None or authenticator is not None:
        if timeout is not USE_CLIENT_DEFAULT:
            timeout = as_timeout(timeout)
        if follow_redirects is not None and not isinstance(follow_redirects, bool):
            raise TypeError(f"follow_redirects must be True, False or None, not {follow_redirects!r}")
        options = (timeout, follow_redirects, authenticator)
    return url, headers, body, options


def _boundary_of(headers: Headers) -> str | None:
    """The boundary of a ``multipart/form-data`` Content-Type the caller set, if any."""
    ctype = headers.get("content-type")
    if ctype is None or not ctype.lower().startswith("multipart/"):
        return None
    for param in ctype.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "boundary" and value:
            return value.strip().strip('"')
    return None


def _set_once(self: object, name: str, value: object) -> None:
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
