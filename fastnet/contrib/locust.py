"""``FastnetUser``: a Locust user whose ``self.client`` sends with fastnet, used like ``FastHttpUser``.

>>> from locust import task
>>> from fastnet.contrib.locust import FastnetUser
>>> class Visitor(FastnetUser):
...     host = "http://127.0.0.1:8080"
...     @task
...     def index(self):
...         self.client.get("/", name="home")
...         with self.client.post("/api", json={"a": 1}, catch_response=True) as r:
...             if r.json().get("ok") is not True:
...                 r.failure("not ok")

Theory of operation
-------------------
Each request fires Locust's ``request`` event once, with the request type, ``name`` (or the URL as
given), the response time in milliseconds (to the end of the body, or to the head with ``stream=True``),
the response length, the response, the user's context and the exception when it failed: a network error
(the response then has ``status_code`` 0, ``content`` None and ``error`` set), or a status of 400 or more
(``fastnet.HTTPStatusError``). ``catch_response=True`` returns a context manager whose ``success()`` and
``failure(...)`` decide instead, as in Locust. Redirects (up to ``max_redirects``), cookies (one jar per
user), gzip and Basic credentials in ``host`` work as in ``FastHttpUser``.

Every user of a process shares one ``fastnet.Client`` per configuration (a sibling per user, for the
cookie jar), so its users share the connection pool: a user reuses any idle keep-alive connection to the
host, and a process opens about as many connections as it has requests in flight.

Locust runs users as gevent greenlets on sockets it monkey-patched. fastnet's blocking client waits only
in Python socket calls (``recv_into``, ``sendall``, ``connect`` through a patched ``selectors`` poller,
``getaddrinfo``, ``ssl``), never in C, so under Locust every wait yields to the other users; timeouts are
the sockets' own (gevent's), since kernel timeouts do not reach a cooperative socket.

Attributes (set them on your subclass): ``connection_timeout`` and ``network_timeout`` (60 s, as
``FastHttpUser``), ``max_redirects`` (30), ``insecure`` (True: no certificate verification, as
``FastHttpUser``; set ``verify`` for a CA path or an ``ssl.SSLContext``), ``default_headers``, ``proxy``
(any fastnet proxy URL: http, https, socks5, socks5h, socks4a; or ``proxy_host``/``proxy_port`` for an HTTP
proxy as in ``FastHttpUser``), and ``client_options`` (more ``fastnet.Client`` options: ``dns=``,
``event_listener=``...).
"""

from __future__ import annotations

import json as _json
import time
from base64 import b64encode
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

from locust import User
from locust.env import Environment
from locust.event import EventHook
from locust.exception import CatchResponseError, LocustError, ResponseError, StopTest
from locust.user.users import RestMixin
from requests.structures import CaseInsensitiveDict

import fastnet

if TYPE_CHECKING:
    import ssl
    from collections.abc import Mapping, Sequence
    from types import TracebackType
    from typing import TypedDict, Unpack

    class _Common(TypedDict, total=False):
        """The keyword options of ``FastnetSession.request`` besides ``stream``, ``data`` and ``json``."""

        name: str | None
        catch_response: bool
        headers: dict[str, str] | None
        auth: tuple[str, str] | None
        allow_redirects: bool
        context: dict[str, object] | None
        params: str | Mapping[str, object] | Sequence[tuple[str, object]] | None

    class _Options(_Common, total=False):
        stream: bool

    class _JsonOptions(_Options, total=False):
        json: object

    class _AllOptions(_JsonOptions, total=False):
        data: dict[str, object] | str | bytes | None

    class _LineOptions(_Common, total=False):
        json: object
        data: dict[str, object] | str | bytes | None


__all__ = ["FastnetResponse", "FastnetSession", "FastnetUser", "ResponseContextManager", "shared_client"]

_perf = time.perf_counter
_now = time.time

#: One client per configuration, shared by every user of the process (each user takes a sibling).
_CLIENTS: dict[tuple[object, ...], fastnet.Client] = {}


def _basic(username: str, password: str) -> str:
    token = b64encode(f"{username}:{password}".encode("latin-1", "replace")).decode("ascii")
    return "Basic " + token


class FastnetResponse:
    """What ``self.client.get(...)`` returns: the response (or the error), with ``FastHttpUser``'s
    response API: ``status_code`` (0 after a network error), ``content`` (None then), ``text``,
    ``json()``, ``headers``, ``url``, ``reason``, ``ok``, ``error``, ``raise_for_status()``,
    ``iter_content()``. ``response`` is the ``fastnet.Response`` itself."""

    __slots__ = ("response", "error", "url", "request_meta", "encoding", "_text", "_headers", "__dict__")

    request_meta: dict[str, object]  # what the request event is (or was) fired with

    def __init__(
        self, response: fastnet.Response | None, url: str, error: BaseException | None = None
    ) -> None:
        self.response = response
        self.url = url
        self.error = error
        self.encoding: str | None = None
        self._text: str | None = None
        self._headers: CaseInsensitiveDict[str] | None = None

    @property
    def status_code(self) -> int:
        response = self.response
        return 0 if response is None else response.status_code

    @property
    def reason(self) -> str:
        response = self.response
        return "" if response is None else response.reason

    @property
    def headers(self) -> CaseInsensitiveDict[str] | None:
        """The headers as a case-insensitive dict (repeated fields joined with ", ", as requests and
        ``HttpUser`` give them); ``response.headers`` has fastnet's ``Headers`` with every field."""
        headers = self._headers
        if headers is None:
            response = self.response
            if response is None:
                return None
            headers = CaseInsensitiveDict()
            store: dict[str, tuple[str, str]] = headers._store
            for name, value in response.headers.items():
                key = name.lower()
                entry = store.get(key)
                store[key] = (name, value) if entry is None else (entry[0], entry[1] + ", " + value)
            self._headers = headers
        return headers

    @property
    def content(self) -> bytes | None:
        response = self.response
        if response is None:
            return None
        return response.content

    @property
    def text(self) -> str | None:
        response = self.response
        if response is None:
            return None
        if self._text is None:
            if self.encoding is None:
                self._text = response.text
            else:
                self._text = response.content.decode(self.encoding, errors="replace")
        return self._text

    def json(self) -> Any:  # any JSON value
        return _json.loads(self.text or "")

    @property
    def ok(self) -> bool:
        return 0 < self.status_code < 400

    def raise_for_status(self) -> None:
        """Raise the error of the request (a network error, or the status of 400 or more)."""
        if self.error is not None:
            raise self.error

    def iter_content(self, chunk_size: int = 1024, decode_content: bool = True) -> Iterator[bytes | str]:
        """The body in pieces of ``chunk_size`` (``FastHttpUser``'s semantics: ``decode_content`` turns
        them into text when they are valid UTF-8)."""
        response = self.response
        if response is None:
            raise LocustError("Cannot iterate content on a response without a response")
        for chunk in response.iter_bytes(chunk_size):
            if decode_content:
                try:
                    yield chunk.decode("utf-8")
                    continue
                except UnicodeDecodeError:
                    pass
            yield chunk

    def close(self) -> None:
        if self.response is not None:
            self.response.close()

    def success(self) -> None:
        raise LocustError(
            "If you want to change the state of the request, you must pass catch_response=True. "
            "See http://docs.locust.io/en/stable/writing-a-locustfile.html#validating-responses"
        )

    def failure(self, *_args: object, **_kwargs: object) -> None:
        self.success()

    def __repr__(self) -> str:
        if self.response is None:
            return f"<FastnetResponse error={self.error!r}>"
        return f"<FastnetResponse [{self.status_code} {self.reason}]>"


class ResponseContextManager(FastnetResponse):
    """``catch_response=True``: the response as a context manager that reports the request when the block
    ends, unless ``success()`` or ``failure(...)`` decided (Locust's ``ResponseContextManager``)."""

    __slots__ = ("_request_event", "_manual_result", "_entered")

    def __init__(self, response: FastnetResponse, request_event: EventHook) -> None:
        super().__init__(response.response, response.url, response.error)
        self.request_meta = response.request_meta
        self._request_event = request_event
        self._manual_result: bool | BaseException | None = None
        self._entered = False

    def __enter__(self) -> ResponseContextManager:
        self._entered = True
        return self

    def __exit__(
        self, exc: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if self._manual_result is not None:
            self.request_meta["exception"] = None if self._manual_result is True else self._manual_result
            self._report()
            return exc is None
        if exc:
            if isinstance(value, ResponseError):
                self.request_meta["exception"] = value
                self._report()
                return True
            return False
        self.request_meta["exception"] = self.error
        self._report()
        return True

    def _report(self) -> None:
        self._request_event.fire(**self.request_meta)  # type: ignore[no-untyped-call]

    def success(self) -> None:
        """Report the request as a success, whatever the status."""
        if not self._entered:
            raise LocustError("Tried to set status on a request that has not yet been made: use a with-block")
        self._manual_result = True

    def failure(self, exc: object = None, *_args: object, **_kwargs: object) -> None:
        """Report the request as a failure (a string becomes a ``CatchResponseError``)."""
        if not self._entered:
            raise LocustError("Tried to set status on a request that has not yet been made: use a with-block")
        if not isinstance(exc, BaseException):
            exc = CatchResponseError(exc)
        self._manual_result = exc

    def raise_for_status(self) -> None:
        if isinstance(self._manual_result, BaseException):
            raise self._manual_result
        if self._manual_result is None:
            super().raise_for_status()


class FastnetSession:
    """``self.client`` of a ``FastnetUser``: ``request(method, url, ...)`` and ``get/post/put/patch/
    delete/head/options``, with ``FastHttpSession``'s arguments (``name``, ``data``, ``json``,
    ``headers``, ``params``, ``auth``, ``catch_response``, ``stream``, ``allow_redirects``, ``context``)."""

    def __init__(
        self,
        base_url: str | None,
        request_event: EventHook,
        user: User | None,
        client: fastnet.Client,
        default_headers: dict[str, str] | None = None,
    ) -> None:
        self.request_event = request_event
        self.user = user
        self.request_name: str | None = None
        self.auth_header: str | None = None
        if base_url:
            parts = urlsplit(base_url)
            if parts.username is not None:
                self.auth_header = _basic(unquote(parts.username), unquote(parts.password or ""))
                base_url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
            base_url = base_url.rstrip("/")
        self.base_url = base_url or ""
        try:  # where the host URL's credentials may go: its own origin only
            self._origin = fastnet.URL(base_url).origin_key if base_url else None
        except ValueError:
            self._origin = None
        self.cookie_jar = fastnet.MemoryCookieJar()
        self.client = client.with_options(cookie_jar=self.cookie_jar)
        self._no_redirects: fastnet.Client | None = None
        self._default_headers = list((default_headers or {}).items())
        self._fire = request_event.fire
        self._urls: dict[str, tuple[str, bool]] = {}

    def _build_url(self, path: str) -> tuple[str, bool]:
        """The URL for ``path``, and whether it is on the host's origin (where the credentials of the host
        URL are sent). A path always stays under the host: ``"@b/x"`` or ``".b/x"`` is never host ``b``."""
        known = self._urls.get(path)
        if known is None:
            if path.startswith(("http://", "https://")):
                try:
                    home = fastnet.URL(path).origin_key == self._origin
                except ValueError:
                    home = False  # the request reports the bad URL
                known = (path, home)
            else:
                known = (self.base_url + (path if path[:1] in ("", "/", "?", "#") else "/" + path), True)
            if len(self._urls) < 10_000:
                self._urls[path] = known
        return known

    @contextmanager
    def rename_request(self, name: str) -> Generator[None, None, None]:
        """Report the requests of the block under one name."""
        self.request_name = name
        try:
            yield
        finally:
            self.request_name = None

    def request(
        self,
        method: str,
        url: str,
        name: str | None = None,
        data: dict[str, object] | str | bytes | None = None,
        catch_response: bool = False,
        stream: bool = False,
        headers: dict[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        json: object = None,
        allow_redirects: bool = True,
        context: dict[str, object] | None = None,
        params: str | Mapping[str, object] | Sequence[tuple[str, object]] | None = None,
        **kwargs: object,
    ) -> Any:
        """Send a request and report it to Locust (see the module's documentation): a ``FastnetResponse``,
        or with ``catch_response=True`` a ``ResponseContextManager`` (hence untyped, as the verbs)."""
        if kwargs:
            raise TypeError(f"unexpected arguments for a FastnetUser request: {', '.join(kwargs)}")
        if self.request_name and not name:
            name = self.request_name
        full_url, home = self._build_url(url)
        if params:
            full_url += ("&" if "?" in full_url else "?") + (
                params if isinstance(params, str) else urlencode(params, doseq=True)
            )
        user = self.user
        if user is not None:
            context = {**user.context(), **(context or {})}
        elif context is None:
            context = {}
        items = self._default_headers
        body = None
        if headers or auth or self.auth_header or data is not None or json is not None or items:
            items = list(items)
            if headers:
                items.extend(headers.items())
            present = {name_.lower() for name_, _ in items}
            if auth:
                items.append(("Authorization", _basic(str(auth[0]), str(auth[1]))))
            elif self.auth_header and home and "authorization" not in present:
                items.append(("Authorization", self.auth_header))
            if data is not None:
                if isinstance(data, dict):
                    body = urlencode(data, doseq=True).encode("utf-8")
                    if "content-type" not in present:
                        items.append(("Content-Type", "application/x-www-form-urlencoded"))
                else:
                    body = data.encode("utf-8") if isinstance(data, str) else data
            elif json is not None:
                body = _json.dumps(json, allow_nan=False).encode("utf-8")  # NaN is no JSON: ValueError
                if "content-type" not in present:
                    items.append(("Content-Type", "application/json"))
                if "accept" not in present:
                    items.append(("Accept", "application/json"))
        client = self.client
        if not allow_redirects:
            client = self._no_redirects or self._without_redirects()
        start_time = _now()
        start = _perf()
        error: BaseException | None = None
        response: fastnet.Response | None
        try:
            if stream:
                response = client.stream(method, full_url, headers=items or None, body=body)
            else:
                response = client.request(method, full_url, headers=items or None, body=body)
        except fastnet.NetworkError as exc:
            response, error = None, exc
        except ValueError as exc:  # a URL that does not parse, a bad header
            response, error = None, exc
        length = 0
        if response is not None:
            if stream:
                length = int(response.headers.get("content-length") or 0)
            else:
                length = len(response.content)
            if response.status_code >= 400:
                try:
                    response.raise_for_status()
                except fastnet.HTTPStatusError as exc:
                    error = exc
        elapsed = (_perf() - start) * 1000
        result = FastnetResponse(response, full_url, error)
        meta = {
            "request_type": method,
            "name": name or url,
            "context": context,
            "response": result,
            "exception": error,
            "start_time": start_time,
            "url": full_url,
            "response_time": elapsed,
            "response_length": length,
        }
        result.request_meta = meta
        if catch_response:
            return ResponseContextManager(result, self.request_event)
        self._fire(**meta)  # type: ignore[no-untyped-call]
        return result

    def _without_redirects(self) -> fastnet.Client:
        self._no_redirects = self.client.with_options(follow_redirects=False)
        return self._no_redirects

    def get(self, url: str, **kwargs: Unpack[_AllOptions]) -> Any:
        return self.request("GET", url, **kwargs)

    def head(self, url: str, **kwargs: Unpack[_AllOptions]) -> Any:
        return self.request("HEAD", url, **kwargs)

    def options(self, url: str, **kwargs: Unpack[_AllOptions]) -> Any:
        return self.request("OPTIONS", url, **kwargs)

    def delete(self, url: str, **kwargs: Unpack[_AllOptions]) -> Any:
        return self.request("DELETE", url, **kwargs)

    def post(
        self,
        url: str,
        data: dict[str, object] | str | bytes | None = None,
        json: object = None,
        **kwargs: Unpack[_Options],
    ) -> Any:
        return self.request("POST", url, data=data, json=json, **kwargs)

    def put(
        self, url: str, data: dict[str, object] | str | bytes | None = None, **kwargs: Unpack[_JsonOptions]
    ) -> Any:
        return self.request("PUT", url, data=data, **kwargs)

    def patch(
        self, url: str, data: dict[str, object] | str | bytes | None = None, **kwargs: Unpack[_JsonOptions]
    ) -> Any:
        return self.request("PATCH", url, data=data, **kwargs)

    def iter_lines(self, url: str, method: str = "GET", **kwargs: Unpack[_LineOptions]) -> Iterator[str]:
        """The lines of a streamed response (``FastHttpSession.iter_lines``)."""
        response = self.request(method, url, stream=True, **kwargs)
        response.raise_for_status()
        yield from response.response.iter_lines()


class FastnetUser(User, RestMixin[ResponseContextManager]):
    """A Locust user whose ``client`` is a ``FastnetSession``: ``FastHttpUser``'s API on fastnet."""

    abstract = True

    connection_timeout: float = 60.0
    network_timeout: float = 60.0
    max_redirects: int = 30
    insecure: bool = True
    verify: bool | str | ssl.SSLContext | None = None
    default_headers: dict[str, str] | None = None
    proxy: str | fastnet.Proxy | None = None
    proxy_host: str | None = None
    proxy_port: int | None = None
    client_options: dict[str, Any] | None = None

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if self.host is None:
            raise StopTest(
                "You must specify the base host. Either in the host attribute in the User class, "
                "or on the command line using the --host option."
            )
        self.client: FastnetSession = FastnetSession(
            self.host,
            self.environment.events.request,
            self,
            self._shared_client(),
            self.default_headers,
        )

    def _shared_client(self) -> fastnet.Client:
        proxy = self.proxy
        if proxy is None and self.proxy_host:
            proxy = fastnet.Proxy.http(self.proxy_host, self.proxy_port or 80)
        return shared_client(
            connection_timeout=self.connection_timeout,
            network_timeout=self.network_timeout,
            max_redirects=self.max_redirects,
            verify=self.verify if self.verify is not None else (not self.insecure),
            proxy=proxy,
            **(self.client_options or {}),
        )


def shared_client(
    *,
    connection_timeout: float | None = 60.0,
    network_timeout: float | None = 60.0,
    max_redirects: int = 30,
    verify: bool | str | ssl.SSLContext = False,
    proxy: str | fastnet.Proxy | None = None,
    **options: Any,
) -> fastnet.Client:
    """The process's ``fastnet.Client`` for this configuration (made on first use; ``options`` are more
    ``fastnet.Client`` options). Users take a sibling of it, so they share its connection pool."""
    key = (
        connection_timeout,
        network_timeout,
        max_redirects,
        verify if isinstance(verify, (bool, str)) else id(verify),
        str(proxy),
        tuple(sorted((k, id(v)) for k, v in options.items())),
    )
    client = _CLIENTS.get(key)
    if client is None or client.is_closed:
        options.setdefault("trust_env", False)
        options.setdefault(
            "connection_pool", fastnet.ConnectionPool(max_idle_connections=100_000, keep_alive=120.0)
        )
        client = fastnet.Client(
            connect_timeout=connection_timeout,
            read_timeout=network_timeout,
            write_timeout=network_timeout,
            max_follow_ups=max_redirects,
            verify=verify,
            proxy=proxy,
            **options,
        )
        _CLIENTS[key] = client
    return client
