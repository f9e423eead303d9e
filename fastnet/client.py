"""``Client``: immutable configuration, the entry point for calls (``AsyncClient`` shares all of it).

A client holds a connection pool, a route database and a DNS resolver (with its cache) that its
siblings made by ``with_options(**changes)`` share, as OkHttp's ``newBuilder()`` clients do: make one
client per application and derive variants from it. Options are checked here, once, with messages that
name the option; the per-request work happens in the compiled engine, which reads a ``ClientCore``.

The options are one explicit, keyword-only signature (``Client.__init__``); ``with_options`` takes the
same parameters, so a type checker catches a misspelt option in either, and at run time the
``TypeError`` suggests the nearest option name. ``ClientBase`` holds the options, their checks and the
shared state; ``Client`` adds the blocking calls, ``fastnet.AsyncClient`` the asyncio ones.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import ipaddress
import os
import ssl
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, Generic, NamedTuple, ParamSpec, Self, TypeVar, overload

from fastnet._internal._sync.bridge import BridgeInterceptor
from fastnet._internal._sync.call_server import CallServerInterceptor
from fastnet._internal._sync.chain import FunctionInterceptor
from fastnet._internal._sync.connect import ConnectInterceptor
from fastnet._internal._sync.map_calls import MapItem, map_calls
from fastnet._internal._sync.real_call import RealCall
from fastnet._internal._sync.real_call import get as _get
from fastnet._internal._sync.real_call import request as _request
from fastnet._internal._sync.retry_follow_up import RetryAndFollowUpInterceptor, strip_for_new_origin
from fastnet._internal.call.factory import RequestFactory
from fastnet._internal.connection.connector import Connector
from fastnet._internal.connection.route_database import RouteDatabase
from fastnet._internal.connection.tls import client_ssl_context
from fastnet._internal.core.client_core import MAX_BODY_SIZE, MAX_FOLLOW_UPS, ClientCore
from fastnet._internal.util.timeouts import timeout_seconds
from fastnet.connection_pool import ConnectionPool
from fastnet.cookies import NO_COOKIES
from fastnet.dispatcher import Dispatcher
from fastnet.dns import as_dns, shared_default_dns
from fastnet.events import EventListener
from fastnet.forms import encode_pairs
from fastnet.headers import Headers, as_headers, headers_from_list
from fastnet.proxy import EnvProxySelector, Proxy
from fastnet.request import Request, basic_authorization
from fastnet.timeout import USE_CLIENT_DEFAULT, Timeout, TimeoutTypes, UseClientDefault, as_timeout
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet.headers import HeadersLike
    from fastnet.request import BodyLike
    from fastnet.response import Response

__all__ = ["Call", "Client", "ClientBase", "ClientOptions"]

#: ``client.new_call(request)`` returns one; ``execute()`` it once, ``cancel()`` it from any thread.
Call = RealCall
T = TypeVar("T")
R = TypeVar("R")
# the blocking client's methods that are the compiled request() with the method bound, per client
_BOUND_METHODS = (
    ("HEAD", "head"),
    ("OPTIONS", "options"),
    ("DELETE", "delete"),
    ("POST", "post"),
    ("PUT", "put"),
    ("PATCH", "patch"),
)
P = ParamSpec("P")


class ClientOptions(NamedTuple):
    """Every option of a client, as given (``client.config``); ``Client.__init__`` documents each."""

    connect_timeout: float | None
    read_timeout: float | None
    write_timeout: float | None
    call_timeout: float | None
    follow_redirects: bool
    follow_ssl_redirects: bool
    retry_on_connection_failure: bool
    max_follow_ups: int
    proxy: Proxy | str | None
    proxy_selector: Any
    trust_env: bool
    fallback_to_direct: bool
    happy_eyeballs: bool
    authenticator: Any
    proxy_authenticator: Any
    sensitive_headers: Iterable[str]
    dns: Any
    interceptors: Iterable[Any]
    network_interceptors: Iterable[Any]
    cookie_jar: Any
    connection_pool: ConnectionPool | None
    max_connections_per_host: int | None
    event_listener: EventListener | None
    event_listener_factory: Callable[[Any], EventListener] | None
    verify: bool | str | ssl.SSLContext
    user_agent: str | None
    max_body_size: int | None
    dispatcher: Dispatcher | None
    headers: HeadersLike | None
    base_url: str | URL | None
    params: Any
    auth: Any
    timeout: TimeoutTypes | UseClientDefault
    cert: str | tuple[str, ...] | None
    min_tls_version: Any
    local_address: str | None

    def __repr__(self) -> str:
        # no secret in a repr: auth's password, cert's key password, sensitive default headers and
        # credentials in a proxy or base URL are shown as ***
        fields = zip(self._fields, self, strict=True)
        shown = ", ".join(f"{name}={_shown_option(name, value)!r}" for name, value in fields)
        return f"ClientOptions({shown})"


class _Shown(str):
    def __repr__(self) -> str:
        return str(self)


def _shown_option(name: str, value: Any) -> Any:
    if value is None:
        return value
    if name == "auth" and isinstance(value, (tuple, list)) and len(value) == 2:
        return (value[0], _Shown("***"))
    if name == "cert" and isinstance(value, tuple) and len(value) > 2 and value[2] is not None:
        return (*value[:2], _Shown("***"), *value[3:])
    if name in ("proxy", "base_url") and isinstance(value, str) and "@" in value:
        try:
            return _Shown(repr(URL(value)))
        except ValueError:
            return _Shown("***")
    if name == "headers" and not isinstance(value, Headers):
        try:
            return as_headers(value)  # its repr hides sensitive values
        except (TypeError, ValueError):
            return value
    return value


# Options whose change gives a sibling its own RouteDatabase and TLS context.
_ROUTE_OPTIONS = frozenset(
    (
        "dns",
        "proxy",
        "proxy_selector",
        "proxy_authenticator",
        "verify",
        "fallback_to_direct",
        "trust_env",
        "cert",
        "min_tls_version",
    )
)
_TIMEOUT_OPTIONS = ("connect_timeout", "read_timeout", "write_timeout", "call_timeout")


class _Option(Generic[T]):
    """A read-only client attribute for one option: ``client.read_timeout`` reads ``client.config``."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, client: None, owner: type) -> _Option[T]: ...
    @overload
    def __get__(self, client: ClientBase, owner: type | None = None) -> T: ...

    def __get__(self, client: ClientBase | None, owner: type | None = None) -> T | _Option[T]:
        if client is None:
            return self
        value: T = getattr(client._options, self.name)
        return value

    def __set__(self, client: ClientBase, value: object) -> None:
        raise AttributeError(f"{self.name} is read-only: use client.with_options({self.name}=...)")


def _suggest_options(
    init: Callable[Concatenate[ClientBase, P], None],
) -> Callable[Concatenate[ClientBase, P], None]:
    """Turn "unexpected keyword argument 'read_timeot'" into a message naming the nearest option."""

    def checked(self: ClientBase, /, *args: P.args, **kwargs: P.kwargs) -> None:
        unknown = [name for name in kwargs if name not in ClientOptions._fields]
        if unknown:
            raise TypeError(_unknown_options(type(self).__name__ + "()", unknown))
        self._given = frozenset(kwargs)  # which timeouts were given, for timeout= (see _with_timeout)
        init(self, *args, **kwargs)

    functools.update_wrapper(checked, init)
    return checked


def _same_options(
    init: Callable[Concatenate[ClientBase, P], None],
) -> Callable[[Callable[..., R]], Callable[Concatenate[ClientBase, P], R]]:
    """``with_options`` takes exactly ``__init__``'s parameters (for type checkers and ``help()``)."""

    def decorate(method: Callable[..., R]) -> Callable[Concatenate[ClientBase, P], R]:
        method.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
        return method

    return decorate


def _unknown_options(where: str, names: list[str]) -> str:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, ClientOptions._fields, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"{where} got unexpected option(s): {', '.join(parts)}"


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


def _bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def _interceptor(name: str, item: Any) -> Any:
    if hasattr(item, "intercept") and callable(item.intercept):
        if inspect.iscoroutinefunction(item.intercept):
            raise TypeError(f"{name}: {item!r} has an async intercept(): it is for fastnet.AsyncClient")
        return item
    if callable(item):
        if inspect.iscoroutinefunction(item):
            raise TypeError(f"{name}: {item!r} is a coroutine function: it is for fastnet.AsyncClient")
        return FunctionInterceptor(item)
    raise TypeError(
        f"{name} entries must be Interceptors or functions taking a chain, not {type(item).__name__}"
    )


def _with_timeout(timeout: Timeout, given: frozenset[str], values: list[Any]) -> list[Any]:
    """The four timeout options once ``timeout=`` is applied: an option given by name wins, then the
    phase ``timeout`` sets, then what was there."""
    values = list(values)
    for i, name in enumerate(_TIMEOUT_OPTIONS):
        phase = getattr(timeout, name[: -len("_timeout")])
        if name not in given and phase is not USE_CLIENT_DEFAULT:
            values[i] = phase
    return values


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

    def intercept(self, chain: Any) -> Response:
        response: Response = chain.proceed(self.apply(chain.request))
        return response

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


class ClientBase:
    """What ``Client`` and ``AsyncClient`` share: the options, their checks, and the pool, routes and DNS
    cache that siblings made by ``with_options`` share. Make a ``Client`` or an ``AsyncClient``."""

    _options: ClientOptions
    _core: ClientCore
    _pool: ConnectionPool
    _dns: Any
    _selector: Any
    _route_database: RouteDatabase
    _dispatcher: Dispatcher | None
    _ssl_context: ssl.SSLContext | None
    _ssl_shared: Any
    _request: Callable[..., Any]
    _factory: RequestFactory
    _given: frozenset[str]

    connect_timeout: _Option[float | None] = _Option()
    read_timeout: _Option[float | None] = _Option()
    write_timeout: _Option[float | None] = _Option()
    call_timeout: _Option[float | None] = _Option()
    follow_redirects: _Option[bool] = _Option()
    follow_ssl_redirects: _Option[bool] = _Option()
    retry_on_connection_failure: _Option[bool] = _Option()
    max_follow_ups: _Option[int] = _Option()
    proxy: _Option[Proxy | str | None] = _Option()
    proxy_selector: _Option[Any] = _Option()
    trust_env: _Option[bool] = _Option()
    fallback_to_direct: _Option[bool] = _Option()
    happy_eyeballs: _Option[bool] = _Option()
    authenticator: _Option[Any] = _Option()
    proxy_authenticator: _Option[Any] = _Option()
    sensitive_headers: _Option[Iterable[str]] = _Option()
    interceptors: _Option[Iterable[Any]] = _Option()
    network_interceptors: _Option[Iterable[Any]] = _Option()
    cookie_jar: _Option[Any] = _Option()
    max_connections_per_host: _Option[int | None] = _Option()
    event_listener: _Option[EventListener | None] = _Option()
    event_listener_factory: _Option[Callable[[Any], EventListener] | None] = _Option()
    verify: _Option[bool | str | ssl.SSLContext] = _Option()
    user_agent: _Option[str | None] = _Option()
    max_body_size: _Option[int | None] = _Option()
    headers: _Option[HeadersLike | None] = _Option()
    base_url: _Option[str | URL | None] = _Option()
    params: _Option[Any] = _Option()
    auth: _Option[Any] = _Option()
    timeout: _Option[TimeoutTypes | UseClientDefault] = _Option()
    cert: _Option[str | tuple[str, ...] | None] = _Option()
    min_tls_version: _Option[Any] = _Option()
    local_address: _Option[str | None] = _Option()

    @_suggest_options
    def __init__(
        self,
        *,
        connect_timeout: float | None = 10.0,
        read_timeout: float | None = 10.0,
        write_timeout: float | None = 10.0,
        call_timeout: float | None = None,
        follow_redirects: bool = True,
        follow_ssl_redirects: bool = True,
        retry_on_connection_failure: bool = True,
        max_follow_ups: int = MAX_FOLLOW_UPS,
        proxy: Proxy | str | None = None,
        proxy_selector: Any = None,
        trust_env: bool = True,
        fallback_to_direct: bool = False,
        happy_eyeballs: bool = True,
        authenticator: Any = None,
        proxy_authenticator: Any = None,
        sensitive_headers: Iterable[str] = (),
        dns: Any = None,
        interceptors: Iterable[Any] = (),
        network_interceptors: Iterable[Any] = (),
        cookie_jar: Any = None,
        connection_pool: ConnectionPool | None = None,
        max_connections_per_host: int | None = None,
        event_listener: EventListener | None = None,
        event_listener_factory: Callable[[Any], EventListener] | None = None,
        verify: bool | str | ssl.SSLContext = True,
        user_agent: str | None = None,
        max_body_size: int | None = MAX_BODY_SIZE,
        dispatcher: Dispatcher | None = None,
        headers: HeadersLike | None = None,
        base_url: str | URL | None = None,
        params: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        cert: str | tuple[str, ...] | None = None,
        min_tls_version: Any = None,
        local_address: str | None = None,
    ) -> None:
        if timeout is not USE_CLIENT_DEFAULT:
            connect_timeout, read_timeout, write_timeout, call_timeout = _with_timeout(
                as_timeout(timeout, "timeout"),
                getattr(self, "_given", frozenset()),
                [connect_timeout, read_timeout, write_timeout, call_timeout],
            )
        options = ClientOptions(
            connect_timeout,
            read_timeout,
            write_timeout,
            call_timeout,
            follow_redirects,
            follow_ssl_redirects,
            retry_on_connection_failure,
            max_follow_ups,
            proxy,
            proxy_selector,
            trust_env,
            fallback_to_direct,
            happy_eyeballs,
            authenticator,
            proxy_authenticator,
            sensitive_headers,
            dns,
            interceptors,
            network_interceptors,
            cookie_jar,
            connection_pool,
            max_connections_per_host,
            event_listener,
            event_listener_factory,
            verify,
            user_agent,
            max_body_size,
            dispatcher,
            headers,
            base_url,
            params,
            auth,
            timeout,
            cert,
            min_tls_version,
            local_address,
        )
        self._build(options, frozenset(), None)

    def _build(self, s: ClientOptions, changed: frozenset[str], shared: Self | None) -> None:
        self._options = s
        core = ClientCore()
        core.connect_timeout = timeout_seconds("connect_timeout", s.connect_timeout)
        core.read_timeout = timeout_seconds("read_timeout", s.read_timeout)
        core.write_timeout = timeout_seconds("write_timeout", s.write_timeout)
        core.call_timeout = timeout_seconds("call_timeout", s.call_timeout)
        core.follow_redirects = _bool("follow_redirects", s.follow_redirects)
        core.follow_ssl_redirects = _bool("follow_ssl_redirects", s.follow_ssl_redirects)
        core.retry_on_connection_failure = _bool("retry_on_connection_failure", s.retry_on_connection_failure)
        max_follow_ups = s.max_follow_ups
        if isinstance(max_follow_ups, bool) or not isinstance(max_follow_ups, int) or max_follow_ups < 0:
            raise ValueError(f"max_follow_ups must be an int >= 0, not {max_follow_ups!r}")
        core.max_follow_ups = max_follow_ups
        _bool("fallback_to_direct", s.fallback_to_direct)
        _bool("happy_eyeballs", s.happy_eyeballs)
        local_address = s.local_address
        if local_address is not None:
            if not isinstance(local_address, str):
                raise TypeError(f"local_address must be an IP address string or None, not {local_address!r}")
            try:
                local_address = ipaddress.ip_address(local_address.strip("[]")).compressed
            except ValueError:
                raise ValueError(f"local_address must be an IP address, not {local_address!r}") from None
        _bool("trust_env", s.trust_env)

        proxy = s.proxy
        if proxy is not None and not isinstance(proxy, Proxy):
            if isinstance(proxy, str):
                proxy = Proxy.from_url(proxy)
            else:
                raise TypeError(f"proxy must be a fastnet.Proxy or a proxy URL, not {type(proxy).__name__}")
        selector = s.proxy_selector
        if selector is not None and not callable(getattr(selector, "select", None)):
            raise TypeError("proxy_selector must have a select(url) method")
        for name in ("authenticator", "proxy_authenticator"):
            value = getattr(s, name)
            if value is not None and not (callable(getattr(value, "authenticate", None)) or callable(value)):
                raise TypeError(f"{name} must have an authenticate(route, response) method")
        core.authenticator = s.authenticator
        core.proxy_authenticator = s.proxy_authenticator

        # requests/httpx defaults: headers and auth=(user, password) by an interceptor, base_url and
        # params when each request is built (the factory), an Authenticator as the authenticator
        defaults = None
        if s.headers is not None:
            try:
                defaults = as_headers(s.headers)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"headers: {exc}") from None
        auth = s.auth
        if auth is not None:
            if isinstance(auth, (tuple, list)):
                if len(auth) != 2:
                    raise ValueError("auth must be a (user, password) pair or an Authenticator")
                credentials = basic_authorization(auth[0], auth[1])
                defaults = (defaults or Headers()).set("Authorization", credentials)
            elif callable(getattr(auth, "authenticate", None)) or callable(auth):
                if s.authenticator is not None:
                    raise ValueError("pass auth= or authenticator=, not both")
                core.authenticator = auth
            else:
                raise TypeError(
                    f"auth must be a (user, password) pair or an Authenticator, not {type(auth).__name__}"
                )
        base_url = s.base_url
        if base_url is not None:
            if not isinstance(base_url, (str, URL)):
                raise TypeError(f"base_url must be a str or URL, not {type(base_url).__name__}")
            try:
                base_url = URL(base_url)
            except ValueError as exc:
                raise ValueError(f"base_url: {exc}") from None
        params = encode_pairs(s.params, "params") if s.params is not None else None
        request_factory = self._new_factory(base_url, params or None)
        self._factory = core.factory = request_factory
        core.factory_builds = request_factory.builds

        jar = s.cookie_jar
        if jar is NO_COOKIES:
            jar = None
        elif jar is not None and not (hasattr(jar, "load_for") and hasattr(jar, "save_from_response")):
            raise TypeError("cookie_jar must have load_for(url) and save_from_response(url, cookies)")
        core.cookie_jar = jar

        listener = s.event_listener
        if listener is not None and not isinstance(listener, EventListener):
            raise TypeError("event_listener must be a fastnet.EventListener")
        factory = s.event_listener_factory
        if factory is not None and not callable(factory):
            raise TypeError("event_listener_factory must be callable(call) -> EventListener")
        if listener is not None and type(listener) is EventListener:
            listener = None  # the base listener does nothing: skip events entirely
        core.event_listener = listener
        core.event_listener_factory = factory

        user_agent = s.user_agent
        if user_agent is not None:
            if not isinstance(user_agent, str):
                raise TypeError("user_agent must be a str")
            Headers({"User-Agent": user_agent})  # checks the value
            core.user_agent = str.__str__(user_agent)  # a str subclass (a StrEnum member): its characters

        limit = s.max_body_size
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(
                f"max_body_size must be a number of bytes >= 1, or None for no limit, not {limit!r}"
            )
        core.max_body_size = 0 if limit is None else limit

        sensitive = s.sensitive_headers
        if isinstance(sensitive, str) or not all(isinstance(h, str) for h in sensitive):
            raise TypeError("sensitive_headers must be a collection of header names")
        core.sensitive_headers = frozenset(h.lower() for h in sensitive)

        self._dispatcher = core.dispatcher = self._choose_dispatcher(s.dispatcher, shared)
        if core.dispatcher is not None:
            core.dispatcher._attach(core)

        pool = s.connection_pool
        per_host = s.max_connections_per_host
        if pool is None:
            if (
                shared is not None
                and shared._options.connection_pool is None
                and per_host == shared._options.max_connections_per_host
            ):
                pool = shared._pool
            else:
                pool = ConnectionPool(max_connections_per_host=per_host)
        elif not isinstance(pool, ConnectionPool):
            raise TypeError("connection_pool must be a fastnet.ConnectionPool")
        elif per_host is not None:
            raise ValueError("set max_connections_per_host on the ConnectionPool you pass, not on the Client")
        self._pool = pool
        core.pool = self._real_pool(pool)

        # the defaults are shared by every client, so clients that share a pool share its connections
        # (the DNS, the proxy selector and the TLS context are part of the pool key, by identity)
        dns = shared_default_dns() if s.dns is None else as_dns(s.dns)
        self._dns = dns

        if proxy is None and selector is None:
            if shared is not None and "trust_env" not in changed and shared._selector is not None:
                selector = shared._selector  # a sibling keeps what its parent read from the environment
            elif s.trust_env:
                selector = _environment_selector()
        self._selector = selector
        route_changed = shared is None or bool(_ROUTE_OPTIONS & changed)
        if shared is None or route_changed:
            self._route_database = RouteDatabase()
            # None: a shared context of the process, built on the first HTTPS connection (tls_context())
            self._ssl_context, self._ssl_shared = client_ssl_context(
                s.verify, cert=s.cert, min_tls_version=s.min_tls_version, trust_env=s.trust_env
            )
            tls_sessions: dict[tuple[str, int], Any] = {}
        else:
            self._route_database = shared._route_database
            self._ssl_context = shared._ssl_context
            self._ssl_shared = shared._ssl_shared
            tls_sessions = shared._core.connector.tls_sessions
        connector = Connector(
            pool=core.pool,
            dns=dns,
            proxy=proxy,
            proxy_selector=selector,
            route_database=self._route_database,
            ssl_context=self._ssl_context,
            ssl_shared=self._ssl_shared,
            proxy_authenticator=s.proxy_authenticator,
            fallback_to_direct=s.fallback_to_direct,
            happy_eyeballs=s.happy_eyeballs,
            local_address=local_address,
            user_agent=core.user_agent,
            tls_sessions=tls_sessions,
        )
        core.connector = connector

        for name in ("interceptors", "network_interceptors"):
            value = getattr(s, name)
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise TypeError(f"{name} must be a list of interceptors")
        core.interceptors = self._interceptors(
            core, connector, s.interceptors, s.network_interceptors, self._defaults(defaults, base_url, core)
        )
        self._core = core
        self._bind(core)
        pool._attach()

    # -- what the blocking and the asyncio client do differently ----------------------------------

    def _choose_dispatcher(self, dispatcher: Dispatcher | None, shared: Self | None) -> Dispatcher | None:
        if dispatcher is None:
            # a sibling shares its parent's; a new client gets its own, whose threads start on first use
            if shared is not None and shared._options.dispatcher is None:
                return shared._dispatcher
            return Dispatcher._unobserved()
        if not isinstance(dispatcher, Dispatcher):
            raise TypeError("dispatcher must be a fastnet.Dispatcher")
        return dispatcher

    def _real_pool(self, pool: ConnectionPool) -> Any:
        return pool._real

    def _new_factory(self, base_url: URL | None, params: str | None) -> RequestFactory:
        return RequestFactory(base_url, params)

    #: The interceptor of the client's default headers: without a base_url, and with one.
    _default_headers: tuple[type[DefaultHeadersInterceptor], type[BaseUrlDefaultHeadersInterceptor]] = (
        DefaultHeadersInterceptor,
        BaseUrlDefaultHeadersInterceptor,
    )

    def _defaults(self, defaults: Headers | None, base_url: URL | None, core: ClientCore) -> Any:
        """The interceptor that adds the client's default headers (None without any)."""
        if defaults is None:
            return None
        if base_url is None:
            return self._default_headers[0](defaults)
        return self._default_headers[1](defaults, base_url.origin_key, core.sensitive_headers)

    def _interceptors(
        self, core: ClientCore, connector: Connector, app: Any, network: Any, defaults: Any
    ) -> list[Any]:
        """The whole chain: the client's default headers, application interceptors, the built-ins, network
        interceptors, CallServer."""
        return (
            ([defaults] if defaults is not None else [])
            + [_interceptor("interceptors", i) for i in app]
            + [RetryAndFollowUpInterceptor(core), BridgeInterceptor(core), ConnectInterceptor(connector)]
            + [_interceptor("network_interceptors", i) for i in network]
            + [CallServerInterceptor()]
        )

    def _bind(self, core: ClientCore) -> None:
        """Bind the entry points that make calls to this client's core."""
        raise NotImplementedError

    # -- options --------------------------------------------------------------------------------

    @property
    def config(self) -> ClientOptions:
        """Every option of this client, as given."""
        return self._options

    @property
    def connection_pool(self) -> ConnectionPool:
        return self._pool

    @property
    def dns(self) -> Any:
        """The resolver calls use (the default cache over the system resolver, unless ``dns=`` was given)."""
        return self._dns

    @property
    def route_database(self) -> RouteDatabase:
        return self._route_database

    @_same_options(__init__)
    def with_options(self, **changes: Any) -> Self:
        """A sibling client with some options changed, sharing pool, route database and DNS cache."""
        unknown = [name for name in changes if name not in ClientOptions._fields]
        if unknown:
            raise TypeError(_unknown_options("with_options()", unknown))
        timeout = changes.get("timeout", USE_CLIENT_DEFAULT)
        if timeout is not USE_CLIENT_DEFAULT:
            current = [changes.get(name, getattr(self._options, name)) for name in _TIMEOUT_OPTIONS]
            values = _with_timeout(as_timeout(timeout, "timeout"), frozenset(changes), current)
            changes.update(zip(_TIMEOUT_OPTIONS, values, strict=True))
        sibling = type(self).__new__(type(self))
        sibling._build(self._options._replace(**changes), frozenset(changes), self)
        return sibling

    def build_request(
        self,
        method: str,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Request:
        """The ``Request`` a call with these options sends, with this client's ``base_url`` and ``params``
        applied (its default ``headers`` and ``auth`` are added by an interceptor as the call runs):
        ``client.new_call(client.build_request("GET", "/users"))``."""
        return self._factory.build(
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    @property
    def is_closed(self) -> bool:
        return bool(self._core.closed)

    def _close(self) -> None:
        core = self._core
        if core.closed:
            return
        core.closed = True
        self._factory.close()
        self._pool._detach()

    def __repr__(self) -> str:
        return f"<fastnet.{type(self).__name__} pool={self._pool!r}>"


class Client(ClientBase):
    """An HTTP client: configuration plus the pool, routes and DNS cache its calls share.

    >>> with fastnet.Client(read_timeout=5) as client:
    ...     r = client.get("http://127.0.0.1:8080/", headers={"Accept": "text/plain"})
    ...     r.status_code, r.text

    Every option is keyword-only and checked here; ``with_options(**changes)`` makes a sibling sharing
    this client's pool, route database and DNS cache.
    """

    _dispatcher: Dispatcher
    _request: Callable[..., Response]

    def _bind(self, core: ClientCore) -> None:
        # the hot entry points: compiled functions bound to this client's core, no Python frame per request
        # (a method a subclass overrides stays the subclass's)
        self._request = functools.partial(_request, core)
        cls = type(self)
        if cls.get is Client.get:
            self.get = functools.partial(_get, core)  # type: ignore[method-assign]
        if cls.request is Client.request:
            self.request = self._request  # type: ignore[method-assign]
        for method, name in _BOUND_METHODS:
            if getattr(cls, name) is getattr(Client, name):
                setattr(self, name, functools.partial(_request, core, method))

    @property
    def dispatcher(self) -> Dispatcher:
        """The ``fastnet.Dispatcher`` that runs this client's enqueued calls (shared with siblings)."""
        dispatcher = self._dispatcher
        dispatcher._observe()  # from now on it counts the execute() calls too
        return dispatcher

    # -- calls ----------------------------------------------------------------------------------

    def new_call(self, request: Request) -> Call:
        """A ``Call`` for ``request``; ``call.execute()`` runs it (once). The request's ``timeout``,
        ``follow_redirects`` and ``auth`` (an Authenticator) apply to this call."""
        if not isinstance(request, Request):
            raise TypeError(f"new_call() takes a fastnet.Request, not {type(request).__name__}")
        return RealCall(self._factory.core_for(self._core, request), request)

    def map(
        self, requests: Iterable[MapItem], *, max_in_flight: int = 32, ordered: bool = False
    ) -> Iterator[tuple[MapItem, Response | Exception]]:
        """Run many requests at once; yields ``(item, response_or_error)`` as each completes.

        ``requests`` holds URLs (fetched with GET; relative ones against ``base_url``) or
        ``fastnet.Request`` objects, and is consumed lazily: a crawler can feed it from a generator. At
        most ``max_in_flight`` requests run or wait to be yielded at a time, so memory stays bounded; each
        response's body is read before it is yielded. With ``ordered=True`` results come in input order.
        Failures are yielded (an exception in place of the response), not raised. Breaking out of the
        loop cancels what is in flight. For more than 32 in flight, give the client a pool that keeps as
        many idle connections (``ConnectionPool(max_idle_connections=64)`` for 64), or those past the
        pool's 32 are closed and opened again.

        >>> for url, result in client.map(urls, max_in_flight=64):
        ...     if isinstance(result, Exception): log.warning("%s failed: %s", url, result)
        ...     else: store(url, result.content)
        """
        return map_calls(self, requests, max_in_flight, ordered)

    def request(
        self,
        method: str,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """Send a request and read the whole response body.

        ``params`` (added to the query), ``headers`` (over the client's), ``cookies`` (for this request),
        ``body`` (bytes, str, a file, an iterable), ``data`` (a mapping or pairs: a form; else a body),
        ``files`` (multipart, streamed), ``json``, ``auth`` (``(user, password)`` or an Authenticator),
        ``timeout`` (seconds, ``(connect, read)``, a ``fastnet.Timeout``, ``None`` for none),
        ``follow_redirects`` and ``proxy`` (a ``Proxy`` or a proxy URL) apply to this request only.
        """
        return _request(
            self._core,
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    def stream(
        self,
        method: str,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """Send a request; the response body streams (use it as a context manager or close it)."""
        return _request(
            self._core,
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
            True,
        )

    def get(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """A GET whose body is read (bound per client to the compiled entry point)."""
        return _get(self._core, url, headers, proxy, params, auth, timeout, follow_redirects, cookies)

    def head(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self._call(
            "HEAD", url, headers, None, None, proxy, params, auth, timeout, follow_redirects, cookies
        )

    def options(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self._call(
            "OPTIONS", url, headers, None, None, proxy, params, auth, timeout, follow_redirects, cookies
        )

    def delete(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self._call(
            "DELETE", url, headers, body, json, proxy, params, auth, timeout, follow_redirects, cookies
        )

    def post(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self.request(
            "POST",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            body=body,
            data=data,
            files=files,
            json=json,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    def put(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self.request(
            "PUT",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            body=body,
            data=data,
            files=files,
            json=json,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    def patch(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return self.request(
            "PATCH",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            body=body,
            data=data,
            files=files,
            json=json,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    def _call(
        self,
        method: str,
        url: str | URL,
        headers: Any,
        body: Any,
        json: Any,
        proxy: Any,
        params: Any,
        auth: Any,
        timeout: Any,
        follow_redirects: Any,
        cookies: Any,
    ) -> Response:
        return _request(
            self._core,
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            None,
            None,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the client: new calls raise. When no other open client uses its connection pool (siblings
        made by ``with_options`` share it), every connection in the pool is closed, in use or idle."""
        self._close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
