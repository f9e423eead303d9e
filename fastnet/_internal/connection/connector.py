"""``Connector``: a client's route-affecting settings, its address cache, and what connect outcomes teach.

A client builds one Connector from its options (siblings that change no route option share it) and
hands it to the engine. The exchange finder asks it for the ``Address`` of a URL (cached per origin and
proxy: building one costs more than the dict lookup) and reports every connect outcome to it. Failures
go to three places: the ``RouteDatabase`` (TCP, TLS and first-exchange failures alike; OkHttp records
only the last), the ``Dns``'s optional ``connect_failed``/``connected`` hooks (which feed the IP
blacklist), and, for proxies, the proxy selector's ``connect_failed``.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from fastnet._internal.connection.tls import shared_ssl_context
from fastnet.exceptions import CanceledError
from fastnet.proxy import Proxy, ProxyType
from fastnet.route import Address

if TYPE_CHECKING:
    from fastnet._internal._sync.pool import RealConnectionPool
    from fastnet._internal.connection.route_database import RouteDatabase
    from fastnet._internal.connection.tls import EnvCAs, TlsSessions
    from fastnet.authenticator import AuthenticatorLike
    from fastnet.dns._base import DnsLike
    from fastnet.proxy import ProxySelector
    from fastnet.route import Route
    from fastnet.url import URL

__all__ = ["Connector"]

# the proxy types as module constants: ``ProxyType.X`` goes through the enum class's ``__getattr__`` hook
_DIRECT = ProxyType.DIRECT
_HTTP = ProxyType.HTTP
_SOCKS = ProxyType.SOCKS

_MAX_ADDRESSES = 4096


class Connector:
    """Route-affecting settings of a client, and the bookkeeping of connect outcomes."""

    __slots__ = (
        "pool",
        "addresses",
        "dns",
        "proxy",
        "proxy_selector",
        "route_database",
        "ssl_context",
        "ssl_shared",
        "proxy_authenticator",
        "fallback_to_direct",
        "happy_eyeballs",
        "user_agent",
        "tls_sessions",
        "local_address",
    )
    pool: RealConnectionPool
    # by URL.origin_key, or (origin_key, proxy) for a per-request proxy
    addresses: dict[str | tuple[str, Proxy], Address]
    dns: DnsLike
    proxy: Proxy | None
    proxy_selector: ProxySelector | None
    route_database: RouteDatabase
    ssl_context: ssl.SSLContext | None  # None: shared_ssl_context(ssl_shared), built by tls_context()
    # which of the process's shared TLS contexts this client uses, when ssl_context is None
    ssl_shared: EnvCAs | None
    proxy_authenticator: AuthenticatorLike | None
    fallback_to_direct: bool
    happy_eyeballs: bool
    user_agent: str
    tls_sessions: TlsSessions
    local_address: str | None  # the IP address sockets bind to before connecting (None: the kernel picks)

    def __init__(
        self,
        *,
        pool: RealConnectionPool,
        dns: DnsLike,
        proxy: Proxy | None,
        proxy_selector: ProxySelector | None,
        route_database: RouteDatabase,
        ssl_context: ssl.SSLContext | None,
        proxy_authenticator: AuthenticatorLike | None,
        fallback_to_direct: bool,
        happy_eyeballs: bool,
        user_agent: str,
        tls_sessions: TlsSessions,
        local_address: str | None = None,
        ssl_shared: EnvCAs | None = None,
    ) -> None:
        self.pool = pool
        self.addresses = {}
        self.dns = dns
        self.proxy = proxy
        self.proxy_selector = proxy_selector
        self.route_database = route_database
        self.ssl_context = ssl_context
        self.ssl_shared = ssl_shared
        self.proxy_authenticator = proxy_authenticator
        self.fallback_to_direct = fallback_to_direct
        self.happy_eyeballs = happy_eyeballs
        self.user_agent = user_agent
        self.tls_sessions = tls_sessions
        self.local_address = local_address

    def address_of(self, url: URL, proxy: Proxy | None) -> Address:
        """The Address for a request to ``url`` (through ``proxy``, a per-request override), cached."""
        key = url.origin_key if proxy is None else (url.origin_key, proxy)
        address = self.addresses.get(key)
        if address is None:
            address = self.address_for(url, proxy)
            if len(self.addresses) > _MAX_ADDRESSES:
                self.addresses.clear()
            self.addresses[key] = address
        return address

    def address_for(self, url: URL, proxy: Proxy | None) -> Address:
        explicit = proxy if proxy is not None else self.proxy
        return Address(
            url.scheme,
            url.host,
            url.port,
            proxy=explicit,
            proxy_selector=None if explicit is not None else self.proxy_selector,
            dns=self.dns,
            ssl_context=self.tls_context() if url.scheme == "https" else None,
            proxy_authenticator=self.proxy_authenticator,
            local_address=self.local_address,
        )

    def tls_context(self) -> ssl.SSLContext:
        """The client's TLS context; a shared one of the process is built here, on first use."""
        context = self.ssl_context
        if context is None:
            context = self.ssl_context = shared_ssl_context(self.ssl_shared)
        return context

    def record_failure(self, route: Route, error: BaseException) -> None:
        """A connect (TCP, TLS, tunnel) or a fresh connection's first exchange failed on ``route``."""
        if isinstance(error, CanceledError):
            return
        self.route_database.failed(route)
        proxy = route.proxy
        if proxy.type is _DIRECT or (proxy.type is _SOCKS and not proxy.remote_dns):
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(route.address.host, route.socket_address[0], error)
        elif proxy.type is _HTTP:
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(proxy.host, route.socket_address[0], error)
        selector = route.address.proxy_selector
        if proxy.type is not _DIRECT and selector is not None:
            notify = getattr(selector, "connect_failed", None)
            if notify is not None:
                try:
                    notify(route.address.url, (proxy.host, proxy.port), error)
                except Exception:  # noqa: BLE001 - a selector's bookkeeping must not break the call
                    pass

    def record_overtaken(self, route: Route, error: BaseException) -> None:
        """An attempt that a later one overtook (Happy Eyeballs): a slow or black-holed address. Only the
        Dns hears of it (the IP blacklist counts it); the route itself did not fail."""
        if route.proxy.type is _DIRECT:
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(route.address.host, route.socket_address[0], error)

    def record_success(self, route: Route) -> None:
        self.route_database.connected(route)
        proxy = route.proxy
        hook = getattr(self.dns, "connected", None)
        if hook is None:
            return
        if proxy.type is _DIRECT or (proxy.type is _SOCKS and not proxy.remote_dns):
            hook(route.address.host, route.socket_address[0])
        elif proxy.type is _HTTP:
            hook(proxy.host, route.socket_address[0])
