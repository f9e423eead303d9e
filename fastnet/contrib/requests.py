"""``FastnetAdapter``: fastnet as the engine of a ``requests.Session``.

>>> import requests
>>> from fastnet.contrib.requests import FastnetAdapter
>>> session = requests.Session()
>>> adapter = FastnetAdapter()
>>> session.mount("http://", adapter)
>>> session.mount("https://", adapter)
>>> session.get("http://127.0.0.1:8080/", timeout=(3, 10)).text
>>> session = fastnet.contrib.requests.Session()   # the same, reading the proxy environment once

Theory of operation
-------------------
requests keeps everything it does above the transport: redirects, cookies, authentication, hooks, the
proxy environment (``trust_env``, ``no_proxy``), ``REQUESTS_CA_BUNDLE``. The adapter does one exchange per
``send()`` on a ``fastnet.Client`` made with redirects, cookies, authenticators and the proxy environment
off, so nothing is done twice. What ``send()`` is given picks the client: ``timeout`` (a number, a
``(connect, read)`` tuple or a urllib3 ``Timeout``), ``verify`` and ``cert`` become a sibling of the base
client (``Client.with_options``), made once per distinct combination and kept, so every sibling shares
one connection pool; the proxy that ``requests.utils.select_proxy`` picks from ``proxies`` (``http``,
``https``, ``socks4``, ``socks4a``, ``socks5``, ``socks5h`` URLs, credentials included) goes on the request
itself, and per-request proxies share that pool too.

The response is a ``requests.Response`` whose ``raw`` is a ``urllib3.HTTPResponse`` reading from fastnet's
streamed body, the object requests expects there: ``iter_content``, ``raw.read()``, ``raw.stream()``, and
requests' own gzip/deflate/brotli/zstd decoding work as with the stock adapter (fastnet passes the body
through as sent, because requests sets ``Accept-Encoding`` itself; a request without one says
``Accept-Encoding: identity``, as http.client does). ``send()`` never reads the body: without
``stream=True`` the session reads it through ``content`` once it has taken ``elapsed`` (the time to the
response head) and run the hooks, and ``content`` reads straight from fastnet. Cookies are handed to
requests' jar through ``raw._original_response.msg``, which exists only when the response sets a cookie
(so a response without ``Set-Cookie`` costs requests no cookie parsing).

A bad ``timeout`` raises the ``ValueError`` the stock adapter raises (urllib3's ``Timeout`` checks it)
before anything is sent. ``close()`` (a session's, which ``requests.get(url, stream=True)`` calls before it
returns) closes the idle connections of the adapter's pool at once and one a streamed body still reads from
when that body is read or closed, as the stock adapter's pool manager does.

fastnet's errors become the exceptions requests users catch, each with ``request=`` set and the fastnet
error as its cause: ``ConnectTimeout``, ``ReadTimeout`` (a TLS handshake that timed out too, as urllib3
reports it), ``SSLError``, ``ProxyError`` (an unreachable or unresolvable proxy too), ``ConnectionError``
(DNS failures, refused connections, a peer that closed or broke HTTP/1.1), and while the body is read,
``ChunkedEncodingError``, ``ContentDecodingError`` and ``ConnectionError`` for a read timeout, as requests
raises them. A write that times out raises ``WriteTimeout``, both a ``ConnectionError`` (what the stock
adapter raises) and a ``Timeout``.

Differences from the stock ``HTTPAdapter``, on purpose: a request that fails on a stale pooled connection
is sent again on a new one (fastnet's ``retry_on_connection_failure``; the stock adapter with its default
``max_retries=0`` raises ``ConnectionError``); a failing SOCKS proxy raises ``ProxyError`` (a subclass of
the ``ConnectionError`` the stock adapter raises); ``max_retries`` takes an int or a ``fastnet.Retry``
(not a urllib3 ``Retry``).
"""

from __future__ import annotations

import http.client
import io
import os
import ssl
import threading
import urllib.parse
import warnings
from collections.abc import Generator, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeAlias

import certifi
import requests
import requests.exceptions as rex
import urllib3
import urllib3.exceptions as u3ex
from requests.adapters import BaseAdapter
from requests.models import PreparedRequest, Response
from requests.sessions import merge_setting
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers, prepend_scheme_if_needed, select_proxy
from urllib3.response import BytesQueueBuffer

import fastnet
from fastnet._internal.connection.tls import build_ssl_context

if TYPE_CHECKING:
    from fastnet.request import BodyLike

#: ``send()``'s ``timeout``, as requests types it (plus urllib3's ``Timeout``, which it also takes).
_Timeout: TypeAlias = "float | tuple[float | None, float | None] | urllib3.Timeout | None"
#: ``send()``'s ``cert``: a PEM file, or (certfile, keyfile).
_Cert: TypeAlias = "str | tuple[str, str] | None"

__all__ = ["FastnetAdapter", "Session", "WriteTimeout"]

_MAX_SIBLINGS = 256
_IDENTITY = ("Accept-Encoding", "identity")


class WriteTimeout(rex.ConnectionError, rex.Timeout):
    """The server did not take the request's bytes within the timeout (the read timeout, as with the stock
    adapter, which raises a ``ConnectionError`` there): caught by ``except requests.Timeout`` too."""


class FastnetAdapter(BaseAdapter):
    """A requests transport adapter that sends each request with fastnet.

    >>> session.mount("http://", FastnetAdapter())
    >>> session.mount("https://", FastnetAdapter())   # or the same adapter for both

    ``client`` is a ``fastnet.Client`` to send with (its pool, DNS, interceptors and event listener are
    kept; redirects, cookies, authenticators and the proxy environment are turned off in the sibling the
    adapter uses, since requests does them). Without one the adapter makes its own from ``options``
    (``fastnet.Client``'s keyword options: ``dns=``, ``event_listener=``, ``happy_eyeballs=``...).
    ``pool_connections`` × ``pool_maxsize`` idle connections are kept (the stock adapter keeps
    ``pool_maxsize`` per host for ``pool_connections`` hosts); ``pool_block=True`` caps connections per
    host at ``pool_maxsize`` (waiting for a free one at most the connect timeout). ``max_retries``: an int
    (that many retries of failed connections, idempotent methods only) or a ``fastnet.Retry``.
    """

    def __init__(
        self,
        client: fastnet.Client | None = None,
        *,
        pool_connections: int = requests.adapters.DEFAULT_POOLSIZE,
        pool_maxsize: int = requests.adapters.DEFAULT_POOLSIZE,
        max_retries: int | fastnet.Retry = 0,
        pool_block: bool = False,
        **options: Any,
    ) -> None:
        super().__init__()
        forced: dict[str, Any] = {
            "follow_redirects": False,
            "cookie_jar": None,
            "authenticator": None,
            "proxy": None,
            "proxy_selector": None,
            "trust_env": False,
            "max_body_size": None,
        }
        retry: fastnet.Retry | None
        if isinstance(max_retries, fastnet.Retry):
            retry = max_retries
        elif isinstance(max_retries, int) and not isinstance(max_retries, bool) and max_retries >= 0:
            retry = fastnet.Retry(total=max_retries, respect_retry_after=False) if max_retries else None
        else:
            raise TypeError(f"max_retries must be an int >= 0 or a fastnet.Retry, not {max_retries!r}")
        self._pool: fastnet.ConnectionPool | None = None  # the pool the adapter made, closed with it
        if client is None:
            if "connection_pool" not in options:
                self._pool = options["connection_pool"] = fastnet.ConnectionPool(
                    max_idle_connections=max(1, pool_connections * pool_maxsize),
                    max_connections_per_host=pool_maxsize if pool_block else None,
                )
            if retry is not None:
                options["interceptors"] = [*options.get("interceptors", ()), retry]
            self._own = True
            base = fastnet.Client(**{**options, **forced})
        else:
            if options:
                raise TypeError("pass either a fastnet.Client or Client options, not both")
            if retry is not None:
                forced["interceptors"] = [*client.interceptors, retry]
            self._own = False
            base = client.with_options(**forced)
        self._base = base
        self._siblings: dict[tuple[object, ...], fastnet.Client] = {}
        self._by_argument: dict[tuple[object, ...], fastnet.Client] = {}
        self._proxies: dict[str, fastnet.Proxy] = {}
        self._lock = threading.Lock()

    @property
    def client(self) -> fastnet.Client:
        """The ``fastnet.Client`` requests go through with their default options."""
        return self._base

    # -- one exchange ------------------------------------------------------------------------------

    def send(
        self,
        request: PreparedRequest,
        stream: bool = False,
        timeout: _Timeout = None,
        verify: bool | str = True,
        cert: _Cert = None,
        proxies: Mapping[str, str] | None = None,
    ) -> Response:
        url = request.url
        if url is None:
            raise rex.InvalidURL("the request has no URL", request=request)
        client = self._client_for(url, timeout, verify, cert, request)
        if not verify and url[:6].lower() == "https:":
            _warn_unverified(url)
        proxy_url = select_proxy(url, proxies) if proxies else None  # type: ignore[arg-type]
        proxy = self._proxy(proxy_url, request) if proxy_url else None
        method = request.method or "GET"
        try:
            call = client.new_call(
                fastnet.Request(method, url, _headers(request.headers), _body(request.body), proxy=proxy)
            )
        except ValueError as exc:
            raise rex.InvalidURL(exc, request=request) from exc
        try:
            network = call.execute()
        except fastnet.NetworkError as exc:
            raise _requests_error(exc, request, proxy) from exc
        return self._build_response(request, _RawResponse.make(network, method, url))

    def _build_response(self, request: PreparedRequest, raw: _RawResponse) -> Response:
        response = _Response()
        response.status_code = raw.status
        response.headers = _case_insensitive(raw.fastnet_response.headers._items)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = raw
        response.reason = raw.reason  # type: ignore[assignment]
        response.url = request.url or ""
        if raw._original_response is not None:  # only when the response set cookies
            requests.cookies.extract_cookies_to_jar(response.cookies, request, raw)
        response.request = request
        response.connection = self  # type: ignore[assignment]
        return response

    # -- the client and proxy for a request ---------------------------------------------------------

    def _client_for(
        self, url: str, timeout: _Timeout, verify: bool | str, cert: _Cert, request: PreparedRequest
    ) -> fastnet.Client:
        tls = url[:6].lower() == "https:"
        try:  # what send() was given, as it was given: one dict lookup per request
            kind = type(timeout)  # 0 and False are equal keys, not equal timeouts
            fast_key: tuple[object, ...] = (tls, kind, timeout, verify, cert) if tls else (tls, kind, timeout)
            sibling = self._by_argument.get(fast_key)
        except TypeError:  # unhashable (a list for cert, say)
            fast_key, sibling = (), None
        if sibling is not None:
            return sibling
        connect, read = _timeouts(timeout)
        key = (connect, read, verify, _cert_key(cert)) if tls else (connect, read)
        sibling = self._siblings.get(key)
        if sibling is None:
            changes: dict[str, Any] = {  # Client options
                "connect_timeout": connect,
                "read_timeout": read,
                "write_timeout": read,
            }
            if tls and (verify is not True or cert):
                changes["verify"] = _ssl_context(verify, cert, request)
            with self._lock:
                sibling = self._siblings.get(key)
                if sibling is None:
                    if len(self._siblings) >= _MAX_SIBLINGS:
                        for old in self._siblings.values():
                            old.close()
                        self._siblings.clear()
                        self._by_argument.clear()
                    sibling = self._base.with_options(**changes)
                    self._siblings[key] = sibling
        if fast_key and len(self._by_argument) < _MAX_SIBLINGS:
            self._by_argument[fast_key] = sibling
        return sibling

    def _proxy(self, proxy_url: str, request: PreparedRequest) -> fastnet.Proxy:
        proxy = self._proxies.get(proxy_url)
        if proxy is None:
            text = prepend_scheme_if_needed(proxy_url, "http")
            try:
                proxy = fastnet.Proxy.from_url(text)
            except ValueError as exc:
                if "://" in text and not text.partition("://")[2].strip("/"):
                    raise rex.InvalidProxyURL(
                        "Please check proxy URL. It is malformed and could be missing the host.",
                        request=request,
                    ) from exc
                raise rex.InvalidProxyURL(str(exc), request=request) from exc
            if len(self._proxies) >= _MAX_SIBLINGS:
                self._proxies.clear()
            self._proxies[proxy_url] = proxy
        return proxy

    def close(self) -> None:
        """Close the adapter's clients and, when the adapter made its own pool, their connections: idle
        ones now, one a streamed body still reads from once that body is read or closed (as the stock
        adapter's ``PoolManager.clear()``; ``requests.get(url, stream=True)`` closes its session before
        the body is read)."""
        with self._lock:
            siblings = list(self._siblings.values())
            self._siblings.clear()
            self._by_argument.clear()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool._attach()  # closing the pool's last client would close the connections in use too
        for sibling in siblings:
            sibling.close()
        if self._own:
            self._base.close()
        if pool is not None:
            for real in pool._halves():
                real.max_idle = 0  # a connection released from now on is closed, not kept idle
            pool.evict_all()


class _Response(Response):
    """``requests.Response`` whose ``content`` is read straight from fastnet (``_read_all``): the session
    reads the body of a request without ``stream=True`` through it, after it took ``elapsed`` and ran the
    response hooks, as with the stock adapter."""

    @property
    def content(self) -> bytes | None:  # type: ignore[override]
        raw = self.raw
        if self._content is False and isinstance(raw, _RawResponse) and raw._fp_bytes_read == 0:
            self._content = _read_all(raw, self.request)  # nothing read yet (else urllib3 may hold some)
            self._content_consumed = True
        return super().content


class Session(requests.Session):
    """A ``requests.Session`` with a ``FastnetAdapter`` mounted for ``http://`` and ``https://`` that reads
    the proxy environment once per host (as ``fastnet.Client`` reads it once), not on every request.

    >>> session = fastnet.contrib.requests.Session()      # instead of requests.Session()

    A stock session scans the whole environment for ``*_proxy`` variables (several times) on every
    request when ``trust_env`` is on, the default: with a few dozen variables that costs more than the
    exchange itself. This one keeps what ``requests.utils.get_environ_proxies`` said for each scheme and
    host (and ``no_proxy``), and ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` as they were when it was made;
    everything else is ``requests.Session``'s.
    """

    def __init__(self, adapter: FastnetAdapter | None = None) -> None:
        super().__init__()
        self.fastnet_adapter = adapter if adapter is not None else FastnetAdapter()
        self.mount("http://", self.fastnet_adapter)
        self.mount("https://", self.fastnet_adapter)
        self._environ_proxies: dict[tuple[str, str | None], dict[str, str]] = {}
        self._ca_bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")

    def merge_environment_settings(
        self,
        url: str,
        proxies: dict[str, str] | None,
        stream: bool | None,
        verify: bool | str | None,
        cert: _Cert,
    ) -> dict[str, object]:
        if not self.trust_env:
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        no_proxy = proxies.get("no_proxy") if proxies is not None else None
        start = url.find("//") + 2
        end = url.find("/", start)
        key = (url if end < 0 else url[:end], no_proxy)
        env_proxies = self._environ_proxies.get(key)
        if env_proxies is None:
            env_proxies = requests.utils.get_environ_proxies(url, no_proxy=no_proxy)
            if len(self._environ_proxies) >= 4096:
                self._environ_proxies.clear()
            self._environ_proxies[key] = env_proxies
        if proxies is not None:
            for name, value in env_proxies.items():
                proxies.setdefault(name, value)
        if verify is True or verify is None:
            verify = self._ca_bundle or verify
        return {
            "proxies": merge_setting(proxies, self.proxies),
            "stream": merge_setting(stream, self.stream),
            "verify": merge_setting(verify, self.verify),
            "cert": merge_setting(cert, self.cert),
        }


# ------------------------------------------------------------------------------------------- request


def _headers(headers: Mapping[str, str | bytes]) -> list[tuple[str, str]]:
    pairs = headers._store.values() if isinstance(headers, CaseInsensitiveDict) else headers.items()
    items: list[tuple[str, str]] = []
    accept_encoding = False
    for name, value in pairs:
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if not accept_encoding and len(name) == 15 and name.lower() == "accept-encoding":
            accept_encoding = True
        items.append((name, value))
    if not accept_encoding:
        items.append(_IDENTITY)  # as http.client: fastnet must not ask for (and decode) gzip itself
    return items


def _body(body: object) -> BodyLike | None:
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    # a file object or an iterable of bytes (requests set the framing headers)
    return body  # type: ignore[return-value]


def _timeouts(timeout: _Timeout) -> tuple[float | None, float | None]:
    """``(connect, read)`` for what ``send()`` was given, refused with the stock adapter's ``ValueError``
    (urllib3's ``Timeout`` checks the values: not a number, a bool, or <= 0)."""
    if isinstance(timeout, tuple):
        try:
            connect, read = timeout
            timeout = urllib3.Timeout(connect=connect, read=read)
        except ValueError:
            raise ValueError(
                f"Invalid timeout {timeout}. Pass a (connect, read) timeout tuple, "
                "or a single float to set both timeouts to the same value."
            ) from None
    elif not isinstance(timeout, urllib3.Timeout):
        timeout = urllib3.Timeout(connect=timeout, read=timeout)
    return _seconds(timeout.connect_timeout), _seconds(timeout.read_timeout)


def _seconds(value: object) -> float | None:
    if value is None or not isinstance(value, (int, float)):
        return None  # None, or urllib3's "default" sentinel: no timeout, as the stock adapter
    return float(value)


def _warn_unverified(url: str) -> None:
    """urllib3's ``InsecureRequestWarning``, which the stock adapter gives for every unverified https
    request (and ``urllib3.disable_warnings()`` silences)."""
    host = urllib.parse.urlsplit(url).hostname
    warnings.warn(
        f"HTTPS request to {host!r} without verifying its certificate (verify=False): anyone on the path "
        "can read and change it",
        u3ex.InsecureRequestWarning,
        stacklevel=2,
    )


def _cert_key(cert: _Cert) -> str | tuple[str, ...] | None:
    if cert is None or isinstance(cert, str):
        return cert
    return tuple(cert)


_CONTEXTS: dict[tuple[bool | str, str | tuple[str, ...] | None], ssl.SSLContext] = {}


def _ssl_context(verify: bool | str, cert: _Cert, request: PreparedRequest) -> ssl.SSLContext:
    key = (verify, _cert_key(cert))
    context = _CONTEXTS.get(key)
    if context is not None:
        return context
    if isinstance(verify, str) and not os.path.exists(verify):
        raise OSError(f"Could not find a suitable TLS CA certificate bundle, invalid path: {verify}")
    if verify is not True and verify is not False and not isinstance(verify, (str, ssl.SSLContext)):
        verify = bool(verify)
    # build_ssl_context(True) is the context every default client shares: a certificate needs its own
    context = build_ssl_context(certifi.where() if verify is True and cert else verify)
    if cert:
        if isinstance(cert, str):
            cert_file, key_file = cert, None
        else:
            cert_file, key_file = cert[0], cert[1]
        if cert_file and not os.path.exists(cert_file):
            raise OSError(f"Could not find the TLS certificate file, invalid path: {cert_file}")
        if key_file and not os.path.exists(key_file):
            raise OSError(f"Could not find the TLS key file, invalid path: {key_file}")
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as exc:
            raise rex.SSLError(exc, request=request) from exc
    if len(_CONTEXTS) >= _MAX_SIBLINGS:
        _CONTEXTS.clear()
    _CONTEXTS[key] = context
    return context


# ------------------------------------------------------------------------------------------- response


class _Body:
    """A file object over fastnet's streamed body, what ``urllib3.HTTPResponse`` reads from (``read``,
    ``read1``, ``close``, ``isclosed``); ``msg`` is the head as ``http.client`` gives it, for requests'
    cookie jar."""

    __slots__ = ("_response", "_pieces", "_pending", "_closed", "msg")

    def __init__(self, response: fastnet.Response) -> None:
        self._response = response
        self._pieces: Iterator[bytes] | None = None
        self._pending = b""
        self._closed = False
        self.msg: http.client.HTTPMessage | None = None

    def read(self, amt: int | None = None) -> bytes:
        if self._closed:
            return b""
        if amt is None or amt < 0:
            if self._pieces is None:
                data = self._response.read()
            else:
                data = self._pending + b"".join(self._pieces)
            self._pending = b""
            self._finish()
            return data
        return self.read1(amt)

    def read1(self, amt: int | None = None) -> bytes:
        if self._closed:
            return b""
        data = self._pending
        if not data:
            if self._pieces is None:
                self._pieces = self._response.iter_bytes()
            data = next(self._pieces, b"")
            if not data:
                self._finish()
                return b""
        if amt is not None and 0 <= amt < len(data):
            self._pending = data[amt:]
            return data[:amt]
        self._pending = b""
        return data

    def _finish(self) -> None:
        self._closed = True
        self._response.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pending = b""
            self._response.close()

    def isclosed(self) -> bool:
        return self._closed

    @property
    def closed(self) -> bool:
        return self._closed


class _RawResponse(urllib3.HTTPResponse):
    """``response.raw``: a ``urllib3.HTTPResponse`` over fastnet's body. ``stream(None)`` yields the body
    as it arrives (the stock adapter's behaviour for chunked responses), not all of it at once.

    ``make()`` builds one without ``HTTPResponse.__init__`` (a quarter of the adapter's cost): the state
    ``__init__`` gives a fresh response with ``preload_content=False``, ``decode_content=False``, from a
    template made once by the real ``__init__``, plus what depends on the response (headers, status,
    the body's length as ``_init_length`` computes it). A test holds the two equal; with a urllib3 whose
    template has other attributes, ``make()`` uses the real ``__init__``.
    """

    fastnet_response: fastnet.Response

    @property
    def headers(self) -> urllib3.HTTPHeaderDict:
        """The head as urllib3 keeps it, made on first use (requests reads fastnet's own)."""
        headers: urllib3.HTTPHeaderDict | None = self.__dict__.get("_headers_dict")
        if headers is None:
            headers = self.__dict__["_headers_dict"] = _header_dict(self.fastnet_response.headers._items)
        return headers

    @headers.setter
    def headers(self, value: urllib3.HTTPHeaderDict) -> None:
        self.__dict__["_headers_dict"] = value

    def stream(
        self, amt: int | None = 2**16, decode_content: bool | None = None
    ) -> Generator[bytes, None, None]:
        if amt is not None:
            yield from super().stream(amt, decode_content)
            return
        while not self.closed or len(self._decoded_buffer) > 0:
            data = self.read1(decode_content=decode_content)
            if data:
                yield data

    @classmethod
    def slow(cls, network: fastnet.Response, method: str, url: str) -> _RawResponse:
        """The same response through ``HTTPResponse.__init__``."""
        body = _Body(network)
        raw = cls(
            body=body,  # type: ignore[arg-type]
            headers=_header_dict(network.headers._items),
            status=network.status_code,
            version=10 if network.protocol == "HTTP/1.0" else 11,
            version_string=network.protocol,
            reason=network.reason,
            preload_content=False,
            decode_content=False,
            request_method=method,
            request_url=url,
        )
        raw._finish(network, body)
        return raw

    @classmethod
    def make(cls, network: fastnet.Response, method: str, url: str) -> _RawResponse:
        template = _TEMPLATE
        if template is None:
            return cls.slow(network, method, url)
        raw = cls.__new__(cls)
        state = raw.__dict__
        state.update(template)
        state["fastnet_response"] = network
        body = _Body(network)
        headers = network.headers
        status = network.status_code
        state["status"] = status
        state["version"] = 10 if network.protocol == "HTTP/1.0" else 11
        state["version_string"] = network.protocol
        state["reason"] = network.reason
        state["_request_url"] = url
        state["_fp"] = body
        state["_decoded_buffer"] = BytesQueueBuffer()
        chunked = False
        if "transfer-encoding" in headers:
            encoding = ", ".join(headers.get_all("transfer-encoding")).lower()
            chunked = "chunked" in (e.strip() for e in encoding.split(","))
        state["chunked"] = chunked
        length = headers.get_all("content-length")
        if chunked or method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            state["length_remaining"] = raw._init_length(method)  # the rare cases: urllib3's own rules
        elif len(length) == 1 and length[0].isdigit():
            state["length_remaining"] = int(length[0])
        else:
            state["length_remaining"] = raw._init_length(method)
        raw._finish(network, body)
        return raw

    def _finish(self, network: fastnet.Response, body: _Body) -> None:
        self.fastnet_response = network
        headers = network.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            message = http.client.HTTPMessage()
            for name, value in headers._items:
                message[name] = value
            body.msg = message
            self._original_response = body  # type: ignore[assignment]


# What HTTPResponse.__init__ sets on a fresh streamed response that depends on nothing in it.
_PER_RESPONSE = frozenset(
    ("headers", "status", "version", "version_string", "reason", "_request_url", "_fp", "_decoded_buffer")
    + ("chunked", "length_remaining")
)
_EXPECTED = _PER_RESPONSE | {
    "_body",
    "_connection",
    "_decoder",
    "_decoder_initialized",
    "_fp_bytes_read",
    "_has_decoded_content",
    "_original_response",
    "_pool",
    "_retries",
    "_sock_shutdown",
    "_uncached_read_occurred",
    "auto_close",
    "chunk_left",
    "decode_content",
    "enforce_content_length",
    "msg",
}


def _template() -> dict[str, object] | None:
    probe = urllib3.HTTPResponse(
        body=io.BytesIO(), headers={}, status=200, preload_content=False, decode_content=False
    )
    state = dict(vars(probe))
    if set(state) != _EXPECTED:
        return None
    immutable = (type(None), bool, int, str, bytes)
    fixed = {k: v for k, v in state.items() if k not in _PER_RESPONSE}
    if not all(isinstance(v, immutable) for v in fixed.values()):
        return None
    return fixed


_TEMPLATE = _template()


def _read_all(raw: _RawResponse, request: PreparedRequest) -> bytes:
    """Read the whole (decoded) body, with requests' errors for what goes wrong."""
    if "content-encoding" not in raw.fastnet_response.headers:
        # nothing to decode: straight from fastnet (urllib3's read loop costs more than the exchange)
        body: _Body = raw._fp  # type: ignore[assignment]
        try:
            data = body.read()
        except fastnet.TimeoutError as exc:
            raise rex.ConnectionError(exc, request=request) from exc
        except fastnet.TlsError as exc:
            raise rex.SSLError(exc, request=request) from exc
        except OSError as exc:
            raise rex.ChunkedEncodingError(exc, request=request) from exc
        raw._fp_bytes_read += len(data)
        if raw.length_remaining is not None:
            raw.length_remaining = max(0, raw.length_remaining - len(data))
        return data
    try:
        return raw.read(decode_content=True) or b""
    except u3ex.ProtocolError as exc:
        raise rex.ChunkedEncodingError(exc, request=request) from exc
    except u3ex.DecodeError as exc:
        raise rex.ContentDecodingError(exc, request=request) from exc
    except u3ex.ReadTimeoutError as exc:
        raise rex.ConnectionError(exc, request=request) from exc
    except u3ex.SSLError as exc:
        raise rex.SSLError(exc, request=request) from exc


def _header_dict(items: list[tuple[str, str]]) -> urllib3.HTTPHeaderDict:
    """``HTTPHeaderDict(items)`` at a third of the cost (its constructor checks protocols per call)."""
    headers = urllib3.HTTPHeaderDict()
    container: MutableMapping[str, list[str]] | None = getattr(headers, "_container", None)
    if container is None:  # pragma: no cover - another urllib3 layout
        for name, value in items:
            headers.add(name, value)
        return headers
    for name, value in items:
        key = name.lower()
        entry = container.get(key)
        if entry is None:
            container[key] = [name, value]
        else:
            entry.append(value)
    return headers


def _case_insensitive(items: list[tuple[str, str]]) -> CaseInsensitiveDict[str]:
    """``CaseInsensitiveDict(HTTPHeaderDict(items))``, as the stock adapter makes ``response.headers``:
    repeated fields joined with ", " under the first one's spelling."""
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
    store: dict[str, tuple[str, str]] = headers._store
    for name, value in items:
        key = name.lower()
        entry = store.get(key)
        store[key] = (name, value) if entry is None else (entry[0], entry[1] + ", " + value)
    return headers


# -------------------------------------------------------------------------------------------- errors


def _requests_error(
    exc: fastnet.NetworkError, request: PreparedRequest, proxy: fastnet.Proxy | None = None
) -> Exception:
    """The requests exception for a fastnet error raised before the response head arrived (``proxy``: the
    request's)."""
    kind: type[rex.RequestException]
    if isinstance(exc, (fastnet.ConnectTimeout, fastnet.PoolTimeout)):
        if exc.phase == "tls":
            kind = rex.ReadTimeout  # urllib3 reports a TLS handshake that timed out as a read timeout
        else:
            kind = rex.ProxyError if _through_proxy(exc) else rex.ConnectTimeout
    elif isinstance(exc, fastnet.ReadTimeout):
        kind = rex.ReadTimeout
    elif isinstance(exc, fastnet.WriteTimeout):
        kind = WriteTimeout
    elif isinstance(exc, fastnet.TimeoutError):
        kind = rex.Timeout
    elif isinstance(exc, fastnet.TlsError):
        kind = rex.SSLError
    elif isinstance(exc, fastnet.ProxyError):
        kind = rex.ProxyError
    elif (
        isinstance(exc, fastnet.UnknownHostError)
        and proxy is not None
        and proxy.type is fastnet.ProxyType.HTTP
    ):
        kind = rex.ProxyError  # the proxy's name (an HTTP proxy resolves the origin's itself)
    elif isinstance(exc, fastnet.ConnectError):
        if _through_proxy(exc):
            kind = rex.ProxyError
        elif exc.attempts and all(isinstance(e, fastnet.TlsError) for _, e in exc.attempts):
            kind = rex.SSLError
        else:
            kind = rex.ConnectionError
    else:
        kind = rex.ConnectionError
    return kind(exc, request=request)


def _through_proxy(exc: fastnet.NetworkError) -> bool:
    """Whether every route the call tried went to a proxy (the proxy, not the origin, failed)."""
    attempts = getattr(exc, "attempts", None)
    if not attempts:
        return False
    for route, _ in attempts:
        proxy = getattr(route, "proxy", None)
        if proxy is None or getattr(proxy, "type", None) == fastnet.ProxyType.DIRECT:
            return False
    return True
