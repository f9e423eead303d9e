"""Engine assembly: a client's options made into the engine its calls run on.

``assemble(options, parent, changed, engine)`` runs every option's check (``check_options``, from the
option table) and builds what a client is made of, an ``Assembly``:

* the ``ClientCore``, the settings every call reads (timeouts, redirects, authenticators, cookie jar,
  events, body limit...);
* the ``RequestFactory``: ``base_url`` and ``params`` applied as requests are built, and the per-call
  settings (``timeout=``, ``follow_redirects=``, ``auth=``) of the verbs;
* the connection pool, and the ``Connector``: DNS, the proxy or proxy selector, the route database and
  the TLS context, which new connections need;
* the interceptor chain: the client's default ``headers`` (and ``auth=(user, password)``), application
  interceptors, RetryAndFollowUp, Bridge, Connect, network interceptors, CallServer.

A sibling made by ``with_options`` (``parent``, with the names of the options it was given in
``changed``) shares its parent's pool unless it is given a pool or another per-host limit, its route
database, TLS context and TLS sessions unless a route option changed (``Option.route``: DNS, proxies,
TLS), the proxy selector its parent read from the environment, and its dispatcher. The defaults are
shared by every client (the DNS cache, the environment's proxy selector, the TLS contexts), so clients
that share a pool share its connections: the pool key holds them by identity.

The blocking and the asyncio client differ only in an ``Engine``: their built-in interceptors, how a
user's interceptor is taken, which half of a ``ConnectionPool`` they use and whether they have a
dispatcher. The asyncio one is made on first use, so a blocking program never imports it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, cast

from fastnet._internal._sync.bridge import BridgeInterceptor
from fastnet._internal._sync.call_server import CallServerInterceptor
from fastnet._internal._sync.chain import FunctionInterceptor
from fastnet._internal._sync.connect import ConnectInterceptor
from fastnet._internal._sync.retry_follow_up import RetryAndFollowUpInterceptor, strip_for_new_origin
from fastnet._internal.call.factory import RequestFactory
from fastnet._internal.call.generated_options import check_options
from fastnet._internal.call.options import ROUTE_OPTIONS
from fastnet._internal.connection.connector import Connector
from fastnet._internal.connection.route_database import RouteDatabase
from fastnet._internal.connection.tls import client_ssl_context
from fastnet._internal.core.client_core import ClientCore
from fastnet.connection_pool import ConnectionPool
from fastnet.dispatcher import Dispatcher
from fastnet.headers import Headers, headers_from_list
from fastnet.proxy import EnvProxySelector
from fastnet.request import basic_authorization

if TYPE_CHECKING:
    import ssl

    from fastnet._internal._sync.pool import RealConnectionPool
    from fastnet._internal.call.generated_options import CheckedOptions, ClientOptions
    from fastnet._internal.call.options import InterceptorLike
    from fastnet._internal.connection.tls import TlsSessions
    from fastnet.cookies import CookieJar
    from fastnet.dns import Dns
    from fastnet.interceptor import Chain
    from fastnet.proxy import ProxySelector
    from fastnet.request import Request
    from fastnet.response import Response

__all__ = [
    "BLOCKING",
    "Assembly",
    "BaseUrlDefaultHeadersInterceptor",
    "DefaultHeadersInterceptor",
    "Engine",
    "assemble",
    "asyncio_engine",
]


class Engine(NamedTuple):
    """What the blocking and the asyncio client assemble differently."""

    asyncio: bool
    function_interceptor: type  # adapts a plain function f(chain) to an interceptor
    retry: type  # RetryAndFollowUp (the factory gives a call with its own settings its own)
    bridge: type
    connect: type
    call_server: type


BLOCKING = Engine(
    False,
    FunctionInterceptor,
    RetryAndFollowUpInterceptor,
    BridgeInterceptor,
    ConnectInterceptor,
    CallServerInterceptor,
)
_ASYNCIO: list[Engine] = []


def asyncio_engine() -> Engine:
    """The asyncio client's engine (its modules imported on first use)."""
    if not _ASYNCIO:
        from fastnet._internal._async.bridge import AsyncBridgeInterceptor
        from fastnet._internal._async.call_server import AsyncCallServerInterceptor
        from fastnet._internal._async.chain import AsyncFunctionInterceptor
        from fastnet._internal._async.connect import AsyncConnectInterceptor
        from fastnet._internal._async.retry_follow_up import AsyncRetryAndFollowUpInterceptor

        _ASYNCIO.append(
            Engine(
                True,
                AsyncFunctionInterceptor,
                AsyncRetryAndFollowUpInterceptor,
                AsyncBridgeInterceptor,
                AsyncConnectInterceptor,
                AsyncCallServerInterceptor,
            )
        )
    return _ASYNCIO[0]


class Assembly:
    """What a client is made of (``assemble``); a ``with_options`` sibling shares some of its parent's."""

    __slots__ = (
        "options",
        "core",
        "factory",
        "pool",
        "dns",
        "selector",
        "route_database",
        "ssl_context",
        "ssl_shared",
        "dispatcher",
    )
    options: ClientOptions  # as given
    core: ClientCore
    factory: RequestFactory
    pool: ConnectionPool
    dns: Dns
    selector: ProxySelector | None  # the proxy selector in use (given, or the environment's)
    route_database: RouteDatabase
    ssl_context: ssl.SSLContext | None  # None: one of the process's shared contexts (ssl_shared says which)
    ssl_shared: tuple[str, str | None, str | None] | None  # the shared context's key, when one is used
    dispatcher: Dispatcher | None


def assemble(
    options: ClientOptions, parent: Assembly | None, changed: frozenset[str], engine: Engine
) -> Assembly:
    """The engine for ``options`` (see the module doc); ``parent``: the assembly of the client
    ``with_options`` was called on, ``changed``: the options given to it."""
    o = check_options(options)
    made = Assembly()
    made.options = options
    core = made.core = ClientCore()
    core.connect_timeout = o.connect_timeout
    core.read_timeout = o.read_timeout
    core.write_timeout = o.write_timeout
    core.call_timeout = o.call_timeout
    core.follow_redirects = o.follow_redirects
    core.follow_ssl_redirects = o.follow_ssl_redirects
    core.retry_on_connection_failure = o.retry_on_connection_failure
    core.max_follow_ups = o.max_follow_ups
    core.authenticator = o.authenticator
    core.proxy_authenticator = o.proxy_authenticator
    # an AsyncClient's jar may have async methods, which the asyncio bridge awaits
    core.cookie_jar = cast("CookieJar | None", o.cookie_jar)
    core.event_listener = o.event_listener
    core.event_listener_factory = o.event_listener_factory
    if o.user_agent is not None:
        core.user_agent = o.user_agent
    core.max_body_size = o.max_body_size
    core.sensitive_headers = o.sensitive_headers

    # requests'/httpx's defaults: headers and auth=(user, password) by an interceptor, base_url and params
    # when each request is built (the factory), an Authenticator as the authenticator
    defaults = o.headers
    if isinstance(o.auth, tuple):
        defaults = (defaults or Headers()).set("Authorization", basic_authorization(o.auth[0], o.auth[1]))
    elif o.auth is not None:
        if o.authenticator is not None:
            raise ValueError("pass auth= or authenticator=, not both")
        core.authenticator = o.auth
    made.factory = core.factory = RequestFactory(o.base_url, o.params, engine.retry)
    core.factory_builds = made.factory.builds

    made.dispatcher = core.dispatcher = _dispatcher(o, parent, engine)
    if made.dispatcher is not None:
        made.dispatcher._attach(core)

    pool = made.pool = _pool(o, parent)
    real_pool: RealConnectionPool = pool._asyncio_real() if engine.asyncio else pool._real
    core.pool = real_pool
    made.dns = o.dns

    proxy, selector = o.proxy, o.proxy_selector
    if proxy is None and selector is None:
        if parent is not None and "trust_env" not in changed and parent.selector is not None:
            selector = parent.selector  # a sibling keeps what its parent read from the environment
        elif o.trust_env:
            selector = _environment_selector()
    made.selector = selector
    tls_sessions: TlsSessions
    if parent is None or ROUTE_OPTIONS & changed:
        made.route_database = RouteDatabase()
        # None: a shared context of the process, built on the first HTTPS connection (tls_context())
        made.ssl_context, made.ssl_shared = client_ssl_context(
            o.verify, cert=o.cert, min_tls_version=o.min_tls_version, trust_env=o.trust_env
        )
        tls_sessions = {}
    else:
        made.route_database = parent.route_database
        made.ssl_context = parent.ssl_context
        made.ssl_shared = parent.ssl_shared
        tls_sessions = parent.core.connector.tls_sessions
    connector = core.connector = Connector(
        pool=real_pool,
        dns=made.dns,
        proxy=proxy,
        proxy_selector=selector,
        route_database=made.route_database,
        ssl_context=made.ssl_context,
        ssl_shared=made.ssl_shared,
        proxy_authenticator=o.proxy_authenticator,
        fallback_to_direct=o.fallback_to_direct,
        happy_eyeballs=o.happy_eyeballs,
        local_address=o.local_address,
        user_agent=core.user_agent,
        tls_sessions=tls_sessions,
    )
    core.interceptors = _chain(engine, core, connector, o, defaults)
    pool._attach()
    return made


def _dispatcher(o: CheckedOptions, parent: Assembly | None, engine: Engine) -> Dispatcher | None:
    if engine.asyncio:
        if o.dispatcher is not None:
            raise TypeError("AsyncClient runs its calls on the event loop: it takes no dispatcher")
        return None
    if o.dispatcher is not None:
        return o.dispatcher
    # a sibling shares its parent's; a new client gets its own, whose threads start on first use
    if parent is not None and parent.options.dispatcher is None and parent.dispatcher is not None:
        return parent.dispatcher
    return Dispatcher._unobserved()


def _pool(o: CheckedOptions, parent: Assembly | None) -> ConnectionPool:
    per_host = o.max_connections_per_host
    if o.connection_pool is not None:
        if per_host is not None:
            raise ValueError("set max_connections_per_host on the ConnectionPool you pass, not on the Client")
        return o.connection_pool
    if (
        parent is not None
        and parent.options.connection_pool is None
        and per_host == parent.options.max_connections_per_host
    ):
        return parent.pool
    return ConnectionPool(max_connections_per_host=per_host)


_ENV_SELECTORS: dict[tuple[str | None, ...], EnvProxySelector | None] = {}
_ENV_NAMES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD")


def _environment_selector() -> EnvProxySelector | None:
    """The proxy selector the environment names (None without proxy variables), one per distinct
    environment, so clients built in the same environment share pooled connections."""
    key = tuple(os.environ.get(n) for name in _ENV_NAMES for n in (name, name.upper()))
    if key not in _ENV_SELECTORS:
        env = EnvProxySelector()
        # no proxy variables at all: no selector, so new connections skip a call per route
        _ENV_SELECTORS[key] = env if (env.http is not None or env.https is not None) else None
    return _ENV_SELECTORS[key]


# -- the interceptor chain ---------------------------------------------------------------------------


def _chain(
    engine: Engine, core: ClientCore, connector: Connector, o: CheckedOptions, defaults: Headers | None
) -> list[object]:
    """The whole chain: the client's default headers, application interceptors, the built-ins, network
    interceptors, CallServer."""
    chain: list[object] = []
    if defaults is not None:
        if o.base_url is None:
            kind = _AsyncDefaultHeaders if engine.asyncio else DefaultHeadersInterceptor
            chain.append(kind(defaults))
        else:
            with_base = _AsyncBaseUrlDefaultHeaders if engine.asyncio else BaseUrlDefaultHeadersInterceptor
            chain.append(with_base(defaults, o.base_url.origin_key, core.sensitive_headers))
    chain += [_interceptor(engine, "interceptors", i) for i in o.interceptors]
    chain += [engine.retry(core), engine.bridge(core), engine.connect(connector)]
    chain += [_interceptor(engine, "network_interceptors", i) for i in o.network_interceptors]
    chain.append(engine.call_server())
    return chain


def _interceptor(engine: Engine, name: str, item: InterceptorLike) -> object:
    """A user's interceptor as the chain runs it, checked for the client's kind."""
    if engine.asyncio:
        if callable(getattr(item, "aintercept", None)):
            return _AsyncPolicy(item)
        intercept = getattr(item, "intercept", None)
        if callable(intercept):
            if not inspect.iscoroutinefunction(intercept):
                raise TypeError(
                    f"{name}: {item!r} has a blocking intercept(); fastnet.AsyncClient needs "
                    "'async def intercept(self, chain)' that awaits chain.proceed(request)"
                )
            return item
        if callable(item):
            if not (inspect.iscoroutinefunction(item) or inspect.iscoroutinefunction(type(item).__call__)):
                raise TypeError(
                    f"{name}: {item!r} is a blocking function; fastnet.AsyncClient needs an "
                    "'async def' function taking the chain"
                )
            return engine.function_interceptor(item)
        raise TypeError(
            f"{name} entries must be Interceptors or async functions taking a chain, "
            f"not {type(item).__name__}"
        )
    intercept = getattr(item, "intercept", None)
    if callable(intercept):
        if inspect.iscoroutinefunction(intercept):
            raise TypeError(f"{name}: {item!r} has an async intercept(): it is for fastnet.AsyncClient")
        return item
    if callable(item):
        if inspect.iscoroutinefunction(item):
            raise TypeError(f"{name}: {item!r} is a coroutine function: it is for fastnet.AsyncClient")
        return engine.function_interceptor(item)
    raise TypeError(
        f"{name} entries must be Interceptors or functions taking a chain, not {type(item).__name__}"
    )


class _AsyncPolicy:
    """Runs an interceptor that offers both forms (``fastnet.Retry``) through its ``aintercept``."""

    __slots__ = ("policy",)

    def __init__(self, policy: InterceptorLike) -> None:
        self.policy = policy

    async def intercept(self, chain: Chain) -> Response:
        response: Response = await self.policy.aintercept(chain)  # type: ignore[union-attr]
        return response

    def __repr__(self) -> str:
        return repr(self.policy)


class DefaultHeadersInterceptor:
    """The client's ``headers=`` (with ``auth=(user, password)`` as an ``Authorization``) under each call's
    own: an application interceptor, first in the chain, adding every header the request does not set.
    Like any header, ``Authorization`` is then dropped by a redirect to another origin."""

    __slots__ = ("headers",)

    def __init__(self, headers: Headers) -> None:
        self.headers = headers

    def apply(self, request: Request) -> Request:
        own = request.headers
        lookup = own._lookup()
        extra = [(name, value) for name, value in self.headers._items if name.lower() not in lookup]
        if not extra:
            return request
        return request.replace(headers=headers_from_list(extra + list(own._items)))

    def intercept(self, chain: Chain) -> Response:
        return chain.proceed(self.apply(chain.request))

    def __repr__(self) -> str:
        return f"<client default headers {[name for name, _ in self.headers._items]}>"


class BaseUrlDefaultHeadersInterceptor(DefaultHeadersInterceptor):
    """``DefaultHeadersInterceptor`` of a client with a ``base_url``: a request whose (absolute) URL leaves
    the base URL's origin gets only the defaults a redirect to another origin would keep, so neither
    ``auth`` nor ``Cookie``, ``Proxy-Authorization``, ``Host`` or a ``sensitive_headers`` default leaves
    with it (the ones the request sets itself are its own)."""

    __slots__ = ("origin", "foreign")

    def __init__(self, headers: Headers, origin: str, sensitive: Iterable[str]) -> None:
        super().__init__(headers)
        self.origin = origin  # the base URL's origin_key
        self.foreign = DefaultHeadersInterceptor(strip_for_new_origin(headers, sensitive))

    def apply(self, request: Request) -> Request:
        if request.url.origin_key == self.origin:
            return super().apply(request)
        return self.foreign.apply(request)


class _AsyncDefaultHeaders(DefaultHeadersInterceptor):
    """``DefaultHeadersInterceptor`` for the asyncio chain."""

    __slots__ = ()

    async def intercept(self, chain: Chain) -> Response:  # type: ignore[override]
        response: Response = await chain.proceed(self.apply(chain.request))  # type: ignore[misc]
        return response


class _AsyncBaseUrlDefaultHeaders(BaseUrlDefaultHeadersInterceptor, _AsyncDefaultHeaders):
    """``BaseUrlDefaultHeadersInterceptor`` for the asyncio chain."""

    __slots__ = ()
