"""fastnet: a fast HTTP/1.1 client with OkHttp's architecture and compiled hot paths.

>>> import fastnet
>>> with fastnet.Client() as client:
...     r = client.get("http://127.0.0.1:8080/", params={"q": "fastnet"}, timeout=5)
...     print(r.status_code, r.text)
>>> fastnet.get("http://127.0.0.1:8080/").json()     # one shared default client

``fastnet.AsyncClient`` is the asyncio client (imported on first use, so a blocking program never
imports asyncio). ``fastnet.compiled`` tells whether the compiled build is running (see
``fastnet/_compat.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastnet import _compat, dns
from fastnet._default import default_client, delete, get, head, options, patch, post, put, request, stream
from fastnet._version import __version__
from fastnet.authenticator import Authenticator, BasicAuthenticator, Challenge, Credentials
from fastnet.client import Call, Client
from fastnet.connection_pool import ConnectionPool
from fastnet.cookies import NO_COOKIES, Cookie, CookieJar, MemoryCookieJar
from fastnet.dispatcher import Callback, Dispatcher
from fastnet.events import EventListener, LoggingEventListener
from fastnet.exceptions import (
    BodyTooLargeError,
    CallTimeout,
    CanceledError,
    ConnectError,
    ConnectionClosedError,
    ConnectTimeout,
    FastnetError,
    HTTPStatusError,
    NetworkError,
    PoolTimeout,
    ProtocolError,
    ProxyError,
    ReadTimeout,
    RouteError,
    TimeoutError,
    TlsError,
    TlsVerificationError,
    UnknownHostError,
    WriteTimeout,
)
from fastnet.forms import MultipartBody
from fastnet.headers import Headers
from fastnet.interceptor import Chain, Interceptor
from fastnet.proxy import EnvProxySelector, Proxy, ProxySelector, ProxyType
from fastnet.request import Request, RequestBody
from fastnet.response import Response
from fastnet.retry import Retry
from fastnet.route import Address, Route
from fastnet.timeout import USE_CLIENT_DEFAULT, Timeout
from fastnet.timings import Timings
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet.async_client import AsyncCall, AsyncClient


def __getattr__(name: str) -> Any:
    if name in ("AsyncClient", "AsyncCall"):
        from fastnet import async_client

        return getattr(async_client, name)
    if name == "compiled":
        global compiled
        compiled = not _compat.NO_EXTENSIONS and all(map(_compat.is_compiled, _compat.compiled_units()))
        return compiled
    raise AttributeError(f"module 'fastnet' has no attribute {name!r}")


if TYPE_CHECKING:
    #: True when every compiled unit runs compiled (worked out, importing each, on first use).
    compiled: bool

__all__ = [
    "Address",
    "AsyncCall",
    "AsyncClient",
    "Authenticator",
    "BasicAuthenticator",
    "BodyTooLargeError",
    "Call",
    "CallTimeout",
    "Callback",
    "CanceledError",
    "Challenge",
    "Chain",
    "Client",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionClosedError",
    "ConnectionPool",
    "Cookie",
    "CookieJar",
    "Credentials",
    "Dispatcher",
    "EnvProxySelector",
    "EventListener",
    "FastnetError",
    "HTTPStatusError",
    "Headers",
    "Interceptor",
    "LoggingEventListener",
    "MemoryCookieJar",
    "MultipartBody",
    "NO_COOKIES",
    "NetworkError",
    "PoolTimeout",
    "ProtocolError",
    "Proxy",
    "ProxyError",
    "ProxySelector",
    "ProxyType",
    "ReadTimeout",
    "Request",
    "RequestBody",
    "Response",
    "Retry",
    "Route",
    "RouteError",
    "TimeoutError",
    "Timeout",
    "Timings",
    "TlsError",
    "TlsVerificationError",
    "URL",
    "USE_CLIENT_DEFAULT",
    "UnknownHostError",
    "WriteTimeout",
    "__version__",
    "compiled",
    "default_client",
    "delete",
    "dns",
    "get",
    "head",
    "options",
    "patch",
    "post",
    "put",
    "request",
    "stream",
]
