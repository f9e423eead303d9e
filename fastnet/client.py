"""``Client``: immutable configuration, the entry point for calls.

A client holds a connection pool, a route database and a DNS resolver (with its cache) that its
siblings made by ``with_options(**changes)`` share, as OkHttp's ``newBuilder()`` clients do: make one
client per application and derive variants from it. Options are validated here, once, with messages
that name the option; the per-request work happens in the compiled ``ClientCore``.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable
from typing import Any

import certifi

from fastnet._internal.connection import Connector
from fastnet._internal.core import ClientCore, FunctionInterceptor, RealCall, Request, Response
from fastnet._internal.core import implementation as _core
from fastnet._internal.route_selector import RouteDatabase
from fastnet.connection_pool import ConnectionPool
from fastnet.events import EventListener
from fastnet.proxy import EnvProxySelector, Proxy

__all__ = ["Client", "Call"]

Call = RealCall

_DEFAULTS: dict[str, Any] = {
    "connect_timeout": 10.0,
    "read_timeout": 10.0,
    "write_timeout": 10.0,
    "call_timeout": None,
    "follow_redirects": True,
    "follow_ssl_redirects": True,
    "retry_on_connection_failure": True,
    "proxy": None,
    "proxy_selector": None,
    "authenticator": None,
    "proxy_authenticator": None,
    "dns": None,
    "interceptors": (),
    "network_interceptors": (),
    "cookie_jar": None,
    "connection_pool": None,
    "event_listener": None,
    "event_listener_factory": None,
    "verify": True,
    "max_follow_ups": 20,
    "sensitive_headers": (),
    "fallback_to_direct": False,
    "happy_eyeballs": True,
    "max_connections_per_host": None,
    "user_agent": None,
    "trust_env": True,
}
# Options whose change gives a sibling its own RouteDatabase (reference §2, last paragraph).
_ROUTE_OPTIONS = frozenset(
    ("dns", "proxy", "proxy_selector", "proxy_authenticator", "verify", "fallback_to_direct", "trust_env")
)


def _timeout(name: str, value: Any, allow_none: bool = True) -> float:
    if value is None:
        if allow_none:
            return 0.0
        raise TypeError(f"{name} must be a number of seconds")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if value != value or value < 0:
        raise ValueError(f"{name} must be >= 0 seconds (or None for none), not {value!r}")
    if value > 2147483.647:
        raise ValueError(f"{name} too large: {value!r} seconds")
    return float(value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def _interceptor(name: str, item: Any) -> Any:
    if hasattr(item, "intercept") and callable(item.intercept):
        return item
    if callable(item):
        return FunctionInterceptor(item)
    raise TypeError(
        f"{name} entries must be Interceptors or functions taking a chain, not {type(item).__name__}"
    )


def _ssl_context(verify: Any) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        context = ssl.create_default_context(cafile=certifi.where())
    elif verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif isinstance(verify, str):
        import os

        if os.path.isdir(verify):
            context = ssl.create_default_context(capath=verify)
        elif os.path.isfile(verify):
            context = ssl.create_default_context(cafile=verify)
        else:
            raise ValueError(f"verify: no CA file or directory at {verify!r}")
    else:
        raise TypeError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, not {verify!r}")
    try:
        context.set_alpn_protocols(["http/1.1"])
    except NotImplementedError:  # pragma: no cover - OpenSSL without ALPN
        pass
    return context


class Client:
    """An HTTP client: configuration plus the pool, routes and DNS cache its calls share.

    >>> with fastnet.Client(read_timeout=5) as client:
    ...     r = client.get("http://127.0.0.1:8080/", headers={"Accept": "text/plain"})
    ...     r.status_code, r.text

    Every option is keyword-only and validated here; ``with_options(**changes)`` makes a sibling
    sharing this client's pool, route database and DNS cache.
    """

    def __init__(self, **options: Any) -> None:
        unknown = set(options) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"Client() got unexpected option(s): {', '.join(sorted(unknown))}")
        settings = dict(_DEFAULTS)
        settings.update(options)
        self._build(settings, shared=None)

    def _build(self, s: dict[str, Any], shared: Client | None) -> None:
        self._settings = s
        core = ClientCore()
        core.connect_timeout = _timeout("connect_timeout", s["connect_timeout"])
        core.read_timeout = _timeout("read_timeout", s["read_timeout"])
        core.write_timeout = _timeout("write_timeout", s["write_timeout"])
        core.call_timeout = _timeout("call_timeout", s["call_timeout"])
        core.follow_redirects = _bool("follow_redirects", s["follow_redirects"])
        core.follow_ssl_redirects = _bool("follow_ssl_redirects", s["follow_ssl_redirects"])
        core.retry_on_connection_failure = _bool(
            "retry_on_connection_failure", s["retry_on_connection_failure"]
        )
        max_follow_ups = s["max_follow_ups"]
        if isinstance(max_follow_ups, bool) or not isinstance(max_follow_ups, int) or max_follow_ups < 0:
            raise ValueError(f"max_follow_ups must be an int >= 0, not {max_follow_ups!r}")
        core.max_follow_ups = max_follow_ups
        _bool("fallback_to_direct", s["fallback_to_direct"])
        _bool("happy_eyeballs", s["happy_eyeballs"])
        _bool("trust_env", s["trust_env"])

        proxy = s["proxy"]
        if proxy is not None and not isinstance(proxy, Proxy):
            if isinstance(proxy, str):
                proxy = Proxy.from_url(proxy)
            else:
                raise TypeError(f"proxy must be a fastnet.Proxy or a proxy URL, not {type(proxy).__name__}")
        selector = s["proxy_selector"]
        if selector is not None and not callable(getattr(selector, "select", None)):
            raise TypeError("proxy_selector must have a select(url) method")
        for name in ("authenticator", "proxy_authenticator"):
            value = s[name]
            if value is not None and not (callable(getattr(value, "authenticate", None)) or callable(value)):
                raise TypeError(f"{name} must have an authenticate(route, response) method")
        core.authenticator = s["authenticator"]
        core.proxy_authenticator = s["proxy_authenticator"]

        jar = s["cookie_jar"]
        if jar is not None:
            from fastnet.cookies import NO_COOKIES

            if jar is NO_COOKIES:
                jar = None
            elif not (hasattr(jar, "load_for") and hasattr(jar, "save_from_response")):
                raise TypeError("cookie_jar must have load_for(url) and save_from_response(url, cookies)")
        core.cookie_jar = jar

        listener = s["event_listener"]
        if listener is not None and not isinstance(listener, EventListener):
            raise TypeError("event_listener must be a fastnet.EventListener")
        factory = s["event_listener_factory"]
        if factory is not None and not callable(factory):
            raise TypeError("event_listener_factory must be callable(call) -> EventListener")
        if listener is not None and type(listener) is EventListener:
            listener = None  # the base listener does nothing: skip events entirely
        core.event_listener = listener
        core.event_listener_factory = factory

        user_agent = s["user_agent"]
        if user_agent is not None:
            if not isinstance(user_agent, str):
                raise TypeError("user_agent must be a str")
            from fastnet._internal.core import Headers

            Headers({"User-Agent": user_agent})  # validates
            core.user_agent = user_agent

        sensitive = s["sensitive_headers"]
        if isinstance(sensitive, str) or not all(isinstance(h, str) for h in sensitive):
            raise TypeError("sensitive_headers must be a collection of header names")
        core.sensitive_headers = frozenset(h.lower() for h in sensitive)

        pool = s["connection_pool"]
        per_host = s["max_connections_per_host"]
        if pool is None:
            if (
                shared is not None
                and shared._settings["connection_pool"] is None
                and per_host == shared._settings["max_connections_per_host"]
            ):
                pool = shared._pool
            else:
                pool = ConnectionPool(max_connections_per_host=per_host)
        elif not isinstance(pool, ConnectionPool):
            raise TypeError("connection_pool must be a fastnet.ConnectionPool")
        elif per_host is not None:
            raise ValueError("set max_connections_per_host on the ConnectionPool you pass, not on the Client")
        self._pool = pool
        core.pool = pool._real

        dns = s["dns"]
        if dns is None:
            if shared is not None and shared._settings["dns"] is None:
                dns = shared._dns
            else:
                from fastnet.dns import default_dns

                dns = default_dns()
        else:
            from fastnet.dns import as_dns

            dns = as_dns(dns)
        self._dns = dns

        if proxy is None and selector is None:
            if (
                shared is not None
                and "trust_env" not in s.get("_changed", ())
                and shared._selector is not None
            ):
                selector = shared._selector
            elif s["trust_env"]:
                env = EnvProxySelector()
                # no proxy variables at all: no selector, so new connections skip a call per route
                selector = env if (env.http is not None or env.https is not None) else None
        self._selector = selector
        route_changed = shared is None or bool(_ROUTE_OPTIONS & set(s.get("_changed", ())))
        route_database = RouteDatabase() if route_changed else shared._route_database  # type: ignore[union-attr]
        self._route_database = route_database
        if shared is not None and not (_ROUTE_OPTIONS & set(s.get("_changed", ()))):
            ssl_context = shared._ssl_context
        else:
            ssl_context = _ssl_context(s["verify"])
        self._ssl_context = ssl_context
        core.connector = Connector(
            dns=dns,
            proxy=proxy,
            proxy_selector=selector,
            route_database=route_database,
            ssl_context=ssl_context,
            proxy_authenticator=s["proxy_authenticator"],
            fallback_to_direct=s["fallback_to_direct"],
            happy_eyeballs=s["happy_eyeballs"],
            user_agent=core.user_agent,
        )
        if shared is not None and not route_changed:
            core.connector.tls_sessions = shared._core.connector.tls_sessions

        for name in ("interceptors", "network_interceptors"):
            if isinstance(s[name], (str, bytes)) or not isinstance(s[name], Iterable):
                raise TypeError(f"{name} must be a list of interceptors")
        app = [_interceptor("interceptors", i) for i in s["interceptors"]]
        network = [_interceptor("network_interceptors", i) for i in s["network_interceptors"]]
        core.interceptors = (
            app
            + [
                _core.RetryAndFollowUpInterceptor(core),
                _core.BridgeInterceptor(core),
                _core.ConnectInterceptor(core),
            ]
            + network
            + [_core.CallServerInterceptor()]
        )
        self._core = core
        self._request = core.request
        # the hot entry point: a C method, no Python frame per request (Client.get documents it)
        self.get = core.get

    # -- options --------------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        settings = self.__dict__.get("_settings")
        if settings is not None and name in _DEFAULTS:
            return settings[name]
        raise AttributeError(f"'Client' object has no attribute {name!r}")

    @property
    def connection_pool(self) -> ConnectionPool:
        return self._pool

    @property
    def dns(self) -> Any:
        return self._dns

    @property
    def route_database(self) -> Any:
        return self._route_database

    def with_options(self, **changes: Any) -> Client:
        """A sibling client with some options changed, sharing pool, route database and DNS cache."""
        unknown = set(changes) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"with_options() got unexpected option(s): {', '.join(sorted(unknown))}")
        settings = dict(self._settings)
        settings.update(changes)
        settings["_changed"] = tuple(changes)
        sibling = Client.__new__(Client)
        sibling._build(settings, shared=self)
        del settings["_changed"]
        return sibling

    # -- calls ----------------------------------------------------------------------------------

    def new_call(self, request: Request) -> RealCall:
        """A ``Call`` for ``request``; ``call.execute()`` runs it (once)."""
        if not isinstance(request, Request):
            raise TypeError(f"new_call() takes a fastnet.Request, not {type(request).__name__}")
        return RealCall(self._core, request)

    def request(
        self,
        method: str,
        url: Any,
        *,
        headers: Any = None,
        body: Any = None,
        json: Any = None,
        proxy: Proxy | None = None,
    ) -> Response:
        """Send a request and read the whole response body."""
        return self._request(method, url, headers, body, json, False, proxy)

    def stream(
        self,
        method: str,
        url: Any,
        *,
        headers: Any = None,
        body: Any = None,
        json: Any = None,
        proxy: Proxy | None = None,
    ) -> Response:
        """Send a request; the response body streams (use it as a context manager or close it)."""
        return self._request(method, url, headers, body, json, True, proxy)

    def get(self, url: Any, *, headers: Any = None, proxy: Proxy | None = None) -> Response:
        return self._request("GET", url, headers, None, None, False, proxy)

    def head(self, url: Any, *, headers: Any = None, proxy: Proxy | None = None) -> Response:
        return self._request("HEAD", url, headers, None, None, False, proxy)

    def options(self, url: Any, *, headers: Any = None, proxy: Proxy | None = None) -> Response:
        return self._request("OPTIONS", url, headers, None, None, False, proxy)

    def delete(
        self, url: Any, *, headers: Any = None, body: Any = None, proxy: Proxy | None = None
    ) -> Response:
        return self._request("DELETE", url, headers, body, None, False, proxy)

    def post(
        self, url: Any, *, headers: Any = None, body: Any = None, json: Any = None, proxy: Proxy | None = None
    ) -> Response:
        return self._request("POST", url, headers, body, json, False, proxy)

    def put(
        self, url: Any, *, headers: Any = None, body: Any = None, json: Any = None, proxy: Proxy | None = None
    ) -> Response:
        return self._request("PUT", url, headers, body, json, False, proxy)

    def patch(
        self, url: Any, *, headers: Any = None, body: Any = None, json: Any = None, proxy: Proxy | None = None
    ) -> Response:
        return self._request("PATCH", url, headers, body, json, False, proxy)

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the idle connections of this client's pool (shared with its siblings)."""
        self._pool.evict_all()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<fastnet.Client pool={self._pool!r}>"


CallFactory = Callable[[Request], RealCall]
