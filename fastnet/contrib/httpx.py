"""``FastnetTransport`` and ``AsyncFastnetTransport``: fastnet as the engine of ``httpx.Client`` and
``httpx.AsyncClient``.

>>> import httpx
>>> from fastnet.contrib.httpx import FastnetTransport, AsyncFastnetTransport
>>> with httpx.Client(transport=FastnetTransport()) as client:
...     client.get("http://127.0.0.1:8080/").text
>>> async with httpx.AsyncClient(transport=AsyncFastnetTransport()) as client:
...     (await client.get("http://127.0.0.1:8080/")).text

Theory of operation
-------------------
A transport does one exchange (``handle_request``): httpx keeps redirects, cookies, authentication, event
hooks and decoding (it sends its own ``Accept-Encoding``, so fastnet hands the body over as sent and httpx
decompresses it). The transport runs a ``fastnet.Client`` (``fastnet.AsyncClient`` for the async one) with
redirects, cookies, authenticators and the proxy environment off. httpx's per-request ``timeout`` (the
``timeout`` extension: connect, read, write) picks a sibling of that client (``with_options``), made once
per distinct value and kept, so all of them share one pool. fastnet waits for a connection slot
(``limits.max_connections``) at most the connect timeout: a ``pool`` timeout shorter than that, and the
``trace`` extension, give the call a listener of its own (``_CallListener``, which passes every event on
to the client's listener), so requests without them cost nothing more. ``trace`` gets httpcore's event
names; the events are queued and handed over when ``execute()`` returns or fails and when the body ends,
so an async callback is awaited, and a callback runs outside fastnet's event sites (what it raises reaches
the caller, as with httpcore). ``AsyncFastnetTransport`` needs asyncio's loop: under trio it raises a
``RuntimeError`` that says so. Request bodies stream both ways: a body httpx already holds goes as bytes,
any other (a generator, a file) is iterated as it is sent, with httpx's own ``Content-Length`` or
``Transfer-Encoding: chunked``; the response body is a ``SyncByteStream``/``AsyncByteStream`` that reads
fastnet's streamed body as it arrives.

The constructor takes ``httpx.HTTPTransport``'s arguments where fastnet has them: ``verify`` (``True``, a
CA path or an ``ssl.SSLContext``; ``False``), ``cert`` (loaded into the context), ``proxy`` (``http``,
``https``, ``socks5``, ``socks5h`` URLs, or an ``httpx.Proxy`` with credentials in the URL or ``auth``),
``limits`` (``max_keepalive_connections`` idle connections kept ``keepalive_expiry`` seconds;
``max_connections`` caps connections *per host*, fastnet having no global cap), ``retries`` (failed
connections retried that many times, idempotent methods only), and ``client=`` to send through a
``fastnet.Client``/``AsyncClient`` of your own; ``local_address`` binds the sockets to that IP address.
``http2=True`` and ``uds`` are refused with a ``ValueError`` (fastnet speaks HTTP/1.1 over TCP).

As with a custom ``httpx.HTTPTransport``, ``httpx.Client(transport=...)`` does not mount the proxy
environment: pass ``proxy=`` to the transport (``httpx.Client(proxy=...)`` would mount httpx's own transport
for the proxy). fastnet's errors become httpx's: ``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``,
``PoolTimeout``, ``ConnectError`` (refused, DNS, TLS), ``ProxyError``, ``RemoteProtocolError`` (a peer that
closed before answering, broke HTTP/1.1 or cut the body short), ``ReadError``, ``UnsupportedProtocol``.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

import certifi
import httpx

import fastnet
from fastnet._internal.connection.tls import build_ssl_context

if TYPE_CHECKING:
    import httpcore

    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet._internal.connection.connection_user import ConnectionUser

#: httpx's ``cert=``: a PEM file, or (certfile, keyfile[, password]).
_Cert: TypeAlias = "str | tuple[str, str] | tuple[str, str, str]"
#: httpx's ``proxy=``.
_ProxyArg: TypeAlias = "str | httpx.URL | httpx.Proxy"
#: The fastnet client a transport sends with (strings: AsyncClient is imported on first use).
C = TypeVar("C", "fastnet.Client", "fastnet.AsyncClient")

__all__ = ["AsyncFastnetTransport", "FastnetTransport"]

#: A request body as fastnet takes it from httpx: the bytes, or the stream's pieces.
_Body: TypeAlias = "bytes | Iterator[bytes] | AsyncIterator[bytes] | None"

_MAX_SIBLINGS = 256
_FORCED: dict[str, Any] = {
    "follow_redirects": False,
    "cookie_jar": None,
    "authenticator": None,
    "proxy_selector": None,
    "trust_env": False,
    "max_body_size": None,
}


class _Base(Generic[C]):
    """What both transports share: the options, the sibling clients, the request and the errors."""

    _base: C
    _siblings: dict[tuple[float | None, float | None, float | None], C]

    def __init__(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: _Cert | None = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(max_connections=100, max_keepalive_connections=20),  # noqa: B008
        proxy: _ProxyArg | None = None,
        uds: str | None = None,
        local_address: str | None = None,
        retries: int = 0,
        *,
        client: C | None = None,
        **options: Any,
    ) -> None:
        """``httpx.HTTPTransport``'s arguments where fastnet has them (see the module's documentation):
        ``verify``, ``cert``, ``limits``, ``proxy``, ``local_address``, ``retries`` (``trust_env`` is
        taken and has no effect); ``http2=True``, ``http1=False`` and ``uds`` are refused with a
        ``ValueError``. ``client`` is a ``fastnet.Client`` (a ``fastnet.AsyncClient`` for
        ``AsyncFastnetTransport``) to send through; ``options`` are that client's keyword options
        (``dns=``, ``event_listener=``, ...) when no ``client`` is given."""
        client_type = self._client_type
        if http2 or not http1:
            raise ValueError("fastnet speaks HTTP/1.1 only: http2=True (or http1=False) is not supported")
        if uds is not None:
            raise ValueError("fastnet connects over TCP: uds= is not supported")
        forced = dict(_FORCED)
        if local_address is not None:
            forced["local_address"] = local_address
        forced["proxy"] = _proxy(proxy)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise TypeError(f"retries must be an int >= 0, not {retries!r}")
        retry = fastnet.Retry(total=retries, respect_retry_after=False) if retries else None
        if client is not None:
            if not isinstance(client, client_type):
                raise TypeError(f"client must be a {client_type.__module__}.{client_type.__name__}")
            if options:
                raise TypeError("pass either a fastnet client or its options, not both")
            if retry is not None:
                # (mypy drops the narrowing of a constrained TypeVar inside a starred display)
                forced["interceptors"] = [*client.interceptors, retry]  # type: ignore[union-attr]
            if verify is not True or cert is not None:
                forced["verify"] = _ssl_context(verify, cert, trust_env)
            self._own = False
            self._base = client.with_options(**forced)
        else:
            if "connection_pool" not in options:
                max_connections = limits.max_connections
                options["connection_pool"] = fastnet.ConnectionPool(
                    max_idle_connections=20
                    if limits.max_keepalive_connections is None
                    else limits.max_keepalive_connections,
                    keep_alive=limits.keepalive_expiry or 5.0,
                    max_connections_per_host=max_connections,
                )
            if retry is not None:
                options["interceptors"] = [*options.get("interceptors", ()), retry]
            options.setdefault("verify", _ssl_context(verify, cert, trust_env))
            self._own = True
            self._base = client_type(**{**options, **forced})
        self._siblings = {}
        self._lock = threading.Lock()

    @property
    def _client_type(self) -> type[C]:
        """``fastnet.Client`` or ``fastnet.AsyncClient``: the client a transport makes (and takes)."""
        raise NotImplementedError

    @property
    def client(self) -> C:
        """The ``fastnet.Client`` (``fastnet.AsyncClient`` for ``AsyncFastnetTransport``) requests go
        through with their default options."""
        return self._base

    @overload
    def _new_call(
        self: _Base[fastnet.Client], request: httpx.Request, chunks: Callable[[Any], _Body]
    ) -> tuple[fastnet.Call, _CallListener | None]: ...
    @overload
    def _new_call(
        self: _Base[fastnet.AsyncClient], request: httpx.Request, chunks: Callable[[Any], _Body]
    ) -> tuple[fastnet.AsyncCall, _CallListener | None]: ...
    def _new_call(
        self, request: httpx.Request, chunks: Callable[[Any], _Body]
    ) -> tuple[fastnet.Call | fastnet.AsyncCall, _CallListener | None]:
        """The fastnet call for ``request``, and its listener when httpx asked for what only a per-call
        listener does: the ``trace`` extension, or a ``pool`` timeout shorter than the connect timeout
        (fastnet waits for a connection slot at most the connect timeout). The body is the bytes httpx
        holds, or ``chunks(request.stream)`` (``_chunks``/``_achunks``) for a body it streams."""
        content = getattr(request, "_content", None)
        body: _Body = content if content is not None else chunks(request.stream)
        if content == b"":
            body = None
        extensions = request.extensions
        client = self._client_for(request)
        call = client.new_call(_fastnet_request(request, body))
        trace = extensions.get("trace")
        timeout = extensions.get("timeout")
        pool = timeout.get("pool") if timeout else None
        if pool is not None:
            connect = timeout.get("connect")  # type: ignore[union-attr]
            if connect is not None and connect <= pool:
                pool = None  # the connect timeout bounds the wait already
        if trace is None and pool is None:
            return call, None
        listener = _CallListener(call.events, request, trace, pool)
        call.events = listener
        return call, listener

    def _client_for(self, request: httpx.Request) -> C:
        timeout = request.extensions.get("timeout")
        if not timeout:
            return self._base
        key = (timeout.get("connect"), timeout.get("read"), timeout.get("write"))
        sibling = self._siblings.get(key)
        if sibling is None:
            with self._lock:
                sibling = self._siblings.get(key)
                if sibling is None:
                    if len(self._siblings) >= _MAX_SIBLINGS:
                        self._siblings.clear()
                    sibling = self._base.with_options(
                        connect_timeout=_seconds(key[0]),
                        read_timeout=_seconds(key[1]),
                        write_timeout=_seconds(key[2]),
                    )
                    self._siblings[key] = sibling
        return sibling


class _Stream:
    """What httpcore's trace events give as a connection (``return_value`` of ``connect_tcp`` and
    ``start_tls``): ``get_extra_info`` of the connection as it was when acquired."""

    __slots__ = ("_info",)

    def __init__(self, connection: RealConnection) -> None:
        self._info: dict[str, object] = {}
        transport = getattr(connection, "transport", None)  # an AsyncClient's connection
        sock = getattr(connection, "sock", None)
        try:
            if transport is not None:
                self._info = {
                    "client_addr": transport.get_extra_info("sockname"),
                    "server_addr": transport.get_extra_info("peername"),
                    "ssl_object": transport.get_extra_info("ssl_object"),
                    "socket": transport.get_extra_info("socket"),
                }
            elif sock is not None:
                self._info = {
                    "client_addr": sock.getsockname(),
                    "server_addr": sock.getpeername(),
                    "ssl_object": getattr(sock, "_sslobj", None),
                    "socket": sock,
                }
        except OSError:
            pass

    def get_extra_info(self, info: str) -> object:
        return self._info.get(info)


def _forward(name: str) -> Callable[..., None]:
    def event(self: _CallListener, call: ConnectionUser, *args: object) -> None:
        if self.inner is not None:
            getattr(self.inner, name)(call, *args)

    event.__name__ = name
    return event


class _CallListener(fastnet.EventListener):
    """The listener of one call that httpx asked more of (every event goes on to the client's own listener,
    if any). ``pool``: the slot wait is bounded by the call's deadline, which this listener brings forward
    at ``call_start`` and puts back once the call has its slot (the first event after it). ``trace``: the
    events become httpcore's trace events (``connection.connect_tcp.started``...), queued here and passed
    to the callback by the transport (``flush``), awaited when it is a coroutine function."""

    # trace: httpx's ``trace`` extension, a callback ``(event name, info)`` (a coroutine function for an
    # AsyncClient)
    def __init__(
        self, inner: fastnet.EventListener | None, request: httpx.Request, trace: Any, pool: float | None
    ) -> None:
        self.inner = inner
        self.request = request
        self.trace = trace
        self.pool = pool
        self.saved_deadline: float | None = None
        self.pending: list[tuple[str, dict[str, object]]] = []
        self.step = ""  # the httpcore step open now ("connection.connect_tcp"...), for its ".failed"
        self.tls = False

    # -- the pool timeout

    def call_start(self, call: ConnectionUser) -> None:
        if self.pool is not None:
            deadline = time.monotonic() + max(self.pool, 1e-6)
            self.saved_deadline = saved = call.deadline
            call.deadline = deadline if saved <= 0 else min(saved, deadline)
        if self.inner is not None:
            self.inner.call_start(call)

    def _slot_taken(self, call: ConnectionUser) -> None:
        if self.saved_deadline is not None:
            call.deadline, self.saved_deadline = self.saved_deadline, None

    # -- trace events

    def _emit(self, step: str, phase: str, info: dict[str, object]) -> None:
        if self.trace is not None:
            self.pending.append((f"{step}.{phase}", info))
        self.step = step if phase == "started" else ""

    def _failed(self, error: BaseException) -> None:
        if self.step:
            self._emit(self.step, "failed", {"exception": error})

    def _core_request(self) -> httpcore.Request | None:
        if self.trace is None:
            return None  # a listener for the pool timeout alone
        import httpcore

        request = self.request
        url = request.url
        return httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            extensions=request.extensions,
        )

    def proxy_select_start(self, call: ConnectionUser, url: fastnet.URL | None) -> None:
        self._slot_taken(call)
        if self.inner is not None:
            self.inner.proxy_select_start(call, url)

    def dns_start(self, call: ConnectionUser, host: str) -> None:
        self._slot_taken(call)
        if self.inner is not None:
            self.inner.dns_start(call, host)

    def connect_start(self, call: ConnectionUser, route: fastnet.Route) -> None:
        self._slot_taken(call)
        host, port = route.socket_address[0], route.socket_address[1]
        timeout = self.request.extensions.get("timeout") or {}
        info = {"host": host, "port": port, "local_address": None, "timeout": timeout.get("connect")}
        self._emit("connection.connect_tcp", "started", {**info, "socket_options": None})
        if self.inner is not None:
            self.inner.connect_start(call, route)

    def connect_failed(self, call: ConnectionUser, route: fastnet.Route, error: BaseException) -> None:
        self._failed(error)
        if self.inner is not None:
            self.inner.connect_failed(call, route, error)

    def secure_connect_start(self, call: ConnectionUser) -> None:
        if self.step == "connection.connect_tcp":
            self._emit("connection.connect_tcp", "complete", {"return_value": None})
        self.tls = True
        self._emit("connection.start_tls", "started", {"server_hostname": self.request.url.host})
        if self.inner is not None:
            self.inner.secure_connect_start(call)

    def connect_end(self, call: ConnectionUser, route: fastnet.Route) -> None:
        if self.step == "connection.connect_tcp":
            self._emit("connection.connect_tcp", "complete", {"return_value": None})
        if self.inner is not None:
            self.inner.connect_end(call, route)

    def connection_acquired(self, call: ConnectionUser, connection: RealConnection) -> None:
        self._slot_taken(call)
        if self.trace is not None:
            stream = _Stream(connection)
            for name, info in self.pending:  # the connection's socket, once there is one
                if name == "connection.connect_tcp.complete":
                    info["return_value"] = stream
            if self.tls:
                self._emit("connection.start_tls", "complete", {"return_value": stream})
        if self.inner is not None:
            self.inner.connection_acquired(call, connection)

    def request_headers_start(self, call: ConnectionUser) -> None:
        self._emit("http11.send_request_headers", "started", {"request": self._core_request()})
        if self.inner is not None:
            self.inner.request_headers_start(call)

    def request_headers_end(self, call: ConnectionUser, request: fastnet.Request) -> None:
        self._emit("http11.send_request_headers", "complete", {"return_value": None})
        if self.inner is not None:
            self.inner.request_headers_end(call, request)

    def request_body_start(self, call: ConnectionUser) -> None:
        self._emit("http11.send_request_body", "started", {"request": self._core_request()})
        if self.inner is not None:
            self.inner.request_body_start(call)

    def request_body_end(self, call: ConnectionUser, byte_count: int) -> None:
        self._emit("http11.send_request_body", "complete", {"return_value": None})
        if self.inner is not None:
            self.inner.request_body_end(call, byte_count)

    def request_failed(self, call: ConnectionUser, error: BaseException) -> None:
        self._failed(error)
        if self.inner is not None:
            self.inner.request_failed(call, error)

    def response_headers_start(self, call: ConnectionUser) -> None:
        self._emit("http11.receive_response_headers", "started", {"request": self._core_request()})
        if self.inner is not None:
            self.inner.response_headers_start(call)

    def response_headers_end(self, call: ConnectionUser, response: fastnet.Response) -> None:
        if self.trace is not None:
            head = (
                response.protocol.encode("ascii"),
                response.status_code,
                response.reason.encode("latin-1", "replace"),
                [(n.encode("latin-1"), v.encode("latin-1")) for n, v in response.headers._items],
            )
            self._emit("http11.receive_response_headers", "complete", {"return_value": head})
        if self.inner is not None:
            self.inner.response_headers_end(call, response)

    def response_body_start(self, call: ConnectionUser) -> None:
        self._emit("http11.receive_response_body", "started", {"request": self._core_request()})
        if self.inner is not None:
            self.inner.response_body_start(call)

    def response_body_end(self, call: ConnectionUser, byte_count: int) -> None:
        self._emit("http11.receive_response_body", "complete", {"return_value": None})
        if self.inner is not None:
            self.inner.response_body_end(call, byte_count)

    def response_failed(self, call: ConnectionUser, error: BaseException) -> None:
        self._failed(error)
        if self.inner is not None:
            self.inner.response_failed(call, error)

    def connection_released(self, call: ConnectionUser, connection: RealConnection) -> None:
        self._emit("http11.response_closed", "started", {})
        self._emit("http11.response_closed", "complete", {"return_value": None})
        if self.inner is not None:
            self.inner.connection_released(call, connection)

    def flush(self) -> None:
        """Pass the events queued so far to a blocking ``trace`` callback."""
        pending, self.pending = self.pending, []
        for name, info in pending:
            self.trace(name, info)

    async def aflush(self) -> None:
        """Pass the events queued so far to an async ``trace`` callback."""
        pending, self.pending = self.pending, []
        for name, info in pending:
            await self.trace(name, info)


for _name in dir(fastnet.EventListener):
    if not _name.startswith("_") and _name not in vars(_CallListener):
        setattr(_CallListener, _name, _forward(_name))


def _seconds(value: float | None) -> float | None:
    if value is None:
        return None
    return 1e-6 if value == 0 else float(value)  # fastnet reads 0 as "no timeout"


def _proxy(proxy: _ProxyArg | None) -> fastnet.Proxy | None:
    if proxy is None:
        return None
    if isinstance(proxy, (str, httpx.URL)):
        proxy = httpx.Proxy(proxy)
    if not isinstance(proxy, httpx.Proxy):
        raise TypeError(f"proxy must be a URL or an httpx.Proxy, not {type(proxy).__name__}")
    url = proxy.url
    if url.scheme not in ("http", "https", "socks5", "socks5h"):
        raise ValueError(
            f"Proxy protocol must be either 'http', 'https', 'socks5', or 'socks5h', but got {url.scheme!r}."
        )
    if proxy.headers:
        raise ValueError(
            "fastnet does not send custom proxy headers: httpx.Proxy(headers=...) is not supported"
        )
    host = url.host
    port = url.port
    username = password = None
    if proxy.auth is not None:
        username, password = proxy.auth
    if url.scheme == "http":
        return fastnet.Proxy.http(host, port or 80, username=username, password=password)
    if url.scheme == "https":
        return fastnet.Proxy.https(host, port or 443, username=username, password=password)
    return fastnet.Proxy.socks(
        host, port or 1080, username=username, password=password, remote_dns=url.scheme == "socks5h"
    )


def _ssl_context(
    verify: ssl.SSLContext | str | bool, cert: _Cert | None, trust_env: bool
) -> ssl.SSLContext | bool | str:
    """What fastnet's ``verify=`` takes for httpx's ``verify`` and ``cert``."""
    if isinstance(verify, ssl.SSLContext):
        if cert is not None:
            _load_cert(verify, cert)
        return verify
    if cert is None:
        return verify
    context = build_ssl_context(certifi.where() if verify is True else verify)
    _load_cert(context, cert)
    return context


def _load_cert(context: ssl.SSLContext, cert: _Cert) -> None:
    if isinstance(cert, str):
        context.load_cert_chain(cert)
    elif len(cert) == 2:
        context.load_cert_chain(cert[0], cert[1])
    else:
        context.load_cert_chain(cert[0], cert[1], cert[2])


def _fastnet_request(request: httpx.Request, body: _Body) -> fastnet.Request:
    url = request.url
    if url.scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(
            "Request URL is missing an 'http://' or 'https://' protocol.", request=request
        )
    headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in request.headers.raw]
    try:
        return fastnet.Request(request.method, str(url), headers, body)
    except ValueError as exc:
        raise httpx.LocalProtocolError(str(exc), request=request) from exc


def _httpx_error(exc: fastnet.NetworkError, request: httpx.Request) -> httpx.TransportError:
    """The httpx exception for a fastnet error raised before the response head arrived."""
    kind: type[httpx.TransportError]
    if isinstance(exc, fastnet.ConnectTimeout):
        kind = httpx.ConnectTimeout
    elif isinstance(exc, fastnet.ReadTimeout):
        kind = httpx.ReadTimeout
    elif isinstance(exc, fastnet.WriteTimeout):
        kind = httpx.WriteTimeout
    elif isinstance(exc, fastnet.PoolTimeout):
        kind = httpx.PoolTimeout
    elif isinstance(exc, fastnet.TimeoutError):
        kind = httpx.TimeoutException
    elif isinstance(exc, fastnet.ProxyError):
        kind = _proxy_error_kind(exc)
    elif isinstance(exc, (fastnet.ConnectError, fastnet.UnknownHostError, fastnet.TlsError)):
        kind = httpx.ConnectError
    elif isinstance(exc, fastnet.ConnectionClosedError) and isinstance(exc.__cause__, ConnectionResetError):
        # reset while reading the head: httpcore's ReadError; a write it cut short is a disconnect there
        kind = httpx.RemoteProtocolError if exc.phase == "write" else httpx.ReadError
    elif isinstance(exc, (fastnet.ConnectionClosedError, fastnet.ProtocolError)):
        kind = httpx.RemoteProtocolError
    else:
        kind = httpx.ReadError
    return kind(str(exc), request=request)


def _proxy_error_kind(exc: fastnet.ProxyError) -> type[httpx.TransportError]:
    """httpx's ``ProxyError`` is a proxy's refusal (a CONNECT answered with another status than 2xx, a
    SOCKS failure); a CONNECT answer that is not HTTP, cut short, late or reset is what httpcore's HTTP/1.1
    reader raises for it."""
    proxy = exc.proxy
    # a SOCKS handshake names its proxy (a str) until the connect step puts the Proxy in
    if (
        exc.status_code is not None
        or not isinstance(proxy, fastnet.Proxy)
        or proxy.type is not fastnet.ProxyType.HTTP
    ):
        return httpx.ProxyError
    cause = exc.__cause__
    if isinstance(cause, (TimeoutError, BlockingIOError)):
        return httpx.ReadTimeout
    if isinstance(cause, OSError) and not isinstance(cause, fastnet.ProtocolError):
        return httpx.ReadError
    return httpx.RemoteProtocolError


def _body_error(exc: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx exception for a fastnet error while the response body streams."""
    if isinstance(exc, fastnet.TimeoutError):
        return httpx.ReadTimeout(str(exc), request=request)
    if isinstance(exc, fastnet.ProtocolError):
        return httpx.RemoteProtocolError(str(exc), request=request)
    return httpx.ReadError(str(exc), request=request)


def _httpx_response(
    response: fastnet.Response,
    request: httpx.Request,
    listener: _CallListener | None,
    plain: Callable[[fastnet.Response, httpx.Request], httpx.SyncByteStream | httpx.AsyncByteStream],
    traced: Callable[
        [fastnet.Response, httpx.Request, _CallListener], httpx.SyncByteStream | httpx.AsyncByteStream
    ],
) -> httpx.Response:
    """The ``httpx.Response`` for fastnet's ``response``, its body a ``plain`` stream, or a ``traced`` one
    when the request has a ``trace`` callback."""
    if listener is not None and listener.trace is not None:
        stream = traced(response, request, listener)
    else:
        stream = plain(response, request)
    return httpx.Response(
        response.status_code,
        headers=response.headers._items,
        stream=stream,
        extensions={
            "http_version": response.protocol.encode("ascii"),
            "reason_phrase": response.reason.encode("latin-1", "replace"),
        },
    )


# ------------------------------------------------------------------------------------------- blocking


class _ResponseStream(httpx.SyncByteStream):
    __slots__ = ("_response", "_request")

    def __init__(self, response: fastnet.Response, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._response.iter_bytes()
        except fastnet.NetworkError as exc:
            raise _body_error(exc, self._request) from exc

    def close(self) -> None:
        self._response.close()


class _TracedResponseStream(_ResponseStream):
    """The body of a response whose request has a ``trace`` callback: the body's events go to it."""

    __slots__ = ("_listener",)

    def __init__(self, response: fastnet.Response, request: httpx.Request, listener: _CallListener) -> None:
        super().__init__(response, request)
        self._listener = listener

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from super().__iter__()
        finally:
            self._listener.flush()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._listener.flush()


def _chunks(stream: Any) -> Iterator[bytes]:  # httpx types request.stream as either kind of stream
    yield from stream


class FastnetTransport(_Base["fastnet.Client"], httpx.BaseTransport):
    """An ``httpx.BaseTransport`` that sends each request with a ``fastnet.Client``.

    >>> client = httpx.Client(transport=FastnetTransport(verify="/etc/ssl/ca.pem", proxy="socks5h://127.0.0.1:1080"))

    ``options`` are ``fastnet.Client`` keyword options (``dns=``, ``event_listener=``, ...) when no
    ``client`` is given.
    """

    @property
    def _client_type(self) -> type[fastnet.Client]:
        return fastnet.Client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call, listener = self._new_call(request, _chunks)
        try:
            response = call.execute()
        except fastnet.NetworkError as exc:
            raise _httpx_error(exc, request) from exc
        finally:
            if listener is not None and listener.trace is not None:
                listener.flush()
        return _httpx_response(response, request, listener, _ResponseStream, _TracedResponseStream)

    def close(self) -> None:
        for sibling in list(self._siblings.values()):
            sibling.close()
        self._siblings.clear()
        if self._own:
            self._base.close()


# -------------------------------------------------------------------------------------------- asyncio


class _AsyncResponseStream(httpx.AsyncByteStream):
    __slots__ = ("_response", "_request")

    def __init__(self, response: fastnet.Response, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except fastnet.NetworkError as exc:
            raise _body_error(exc, self._request) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class _TracedAsyncResponseStream(_AsyncResponseStream):
    """The body of a response whose request has a ``trace`` callback: the body's events go to it."""

    __slots__ = ("_listener",)

    def __init__(self, response: fastnet.Response, request: httpx.Request, listener: _CallListener) -> None:
        super().__init__(response, request)
        self._listener = listener

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in super().__aiter__():
                yield chunk
        finally:
            await self._listener.aflush()

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self._listener.aflush()


async def _achunks(stream: Any) -> AsyncIterator[bytes]:  # as _chunks
    async for chunk in stream:
        yield chunk


class AsyncFastnetTransport(_Base["fastnet.AsyncClient"], httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` that sends each request with a ``fastnet.AsyncClient``; the same
    arguments as ``FastnetTransport``."""

    @property
    def _client_type(self) -> type[fastnet.AsyncClient]:
        return fastnet.AsyncClient

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        call, listener = self._new_call(request, _achunks)
        try:
            response = await call.execute()
        except fastnet.NetworkError as exc:
            raise _httpx_error(exc, request) from exc
        except RuntimeError as exc:
            if "no running event loop" in str(exc):  # trio's loop, or another that is not asyncio's
                raise RuntimeError(
                    "AsyncFastnetTransport runs on asyncio only (fastnet.AsyncClient), not on trio "
                    "or another event loop: use httpx's own transport there"
                ) from exc
            raise
        finally:
            if listener is not None and listener.trace is not None:
                await listener.aflush()
        return _httpx_response(response, request, listener, _AsyncResponseStream, _TracedAsyncResponseStream)

    async def aclose(self) -> None:
        for sibling in list(self._siblings.values()):
            await sibling.aclose()
        self._siblings.clear()
        if self._own:
            await self._base.aclose()
