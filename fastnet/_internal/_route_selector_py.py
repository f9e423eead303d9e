"""Address, Route, RouteDatabase and RouteSelector: which sockets to open for an origin, in what order.

Theory of operation. An :class:`Address` is the pooling key: everything that decides whether a
connection made for one request may carry another. A :class:`Route` is one concrete way to reach it:
the address, the proxy chosen for it, and the socket address to connect to (a resolved IP for DIRECT
and HTTP-proxy routes; the origin host, unresolved, for SOCKS routes whose proxy resolves names).

:class:`RouteSelector` iterates in two levels, as in OkHttp: proxies in order (an explicit proxy, else
the proxy selector's answer, else DIRECT; a single DIRECT appended only with ``fallback_to_direct``),
and for each proxy its socket addresses (DNS runs lazily, one proxy at a time, so a working first
proxy never costs a lookup for the second). Each ``next()`` returns one *selection*: the routes of
one proxy that are not in the :class:`RouteDatabase` of recently failed routes. Postponed routes are
always tried last, all together, after every proxy's good routes. With Happy Eyeballs the addresses
of each lookup are interleaved by family (RFC 8305 §4) starting with the family DNS put first.

This module is compiled by Cython in pure-Python mode (types in ``_route_selector_c.pxd``); it must
stay importable and correct as plain Python. It is imported only through ``route_selector.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from fastnet.exceptions import ProxyError, RouteError, UnknownHostError
from fastnet.proxy import Proxy
from fastnet.url import URL

__all__ = [
    "Address",
    "Route",
    "RouteDatabase",
    "RouteSelector",
    "is_ip_literal",
    "reorder_for_happy_eyeballs",
]

_DIRECT = Proxy.NO_PROXY


def is_ip_literal(host: str) -> bool:
    """True for an IPv6 literal (any ``:``) or a dotted-quad IPv4 literal."""
    if ":" in host:
        return True
    parts = host.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part or len(part) > 3 or not part.isdigit() or not part.isascii() or int(part) > 255:
            return False
    return True


def _bracket(host: str) -> str:
    return "[" + host + "]" if ":" in host else host


def _ident(obj: Any) -> int:
    return 0 if obj is None else id(obj)


class Address:
    """The pooling key for connections: origin, proxy choice, and the components that shape a connection.

    Equal addresses may share a pooled connection. Equality and hash cover scheme, host, port and
    proxy by value, and ``dns``, ``proxy_selector``, ``ssl_context`` and ``proxy_authenticator`` by
    *identity* (two distinct but equal-looking DNS objects do not pool together).

    >>> a = Address("https", "example.com", 443)
    >>> a == Address("https", "example.com", 443), a.is_https, str(a.url)
    (True, True, 'https://example.com/')
    """

    __slots__ = (
        "scheme",
        "host",
        "port",
        "proxy",
        "proxy_selector",
        "dns",
        "ssl_context",
        "proxy_authenticator",
        "_url",
        "_hash",
    )

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        *,
        proxy: Proxy | None = None,
        proxy_selector: Any = None,
        dns: Any = None,
        ssl_context: Any = None,
        proxy_authenticator: Any = None,
    ) -> None:
        if scheme != "http" and scheme != "https":
            raise ValueError(f"Address scheme must be 'http' or 'https', not {scheme!r}")
        if not host:
            raise ValueError("Address host must not be empty")
        if not isinstance(port, int):
            raise TypeError(f"Address port must be an int, not {type(port).__name__}")
        if proxy is not None and not isinstance(proxy, Proxy):
            raise TypeError(f"Address proxy must be a Proxy or None, not {type(proxy).__name__}")
        self.scheme = scheme
        self.host = host
        self.port = port
        self.proxy = proxy
        self.proxy_selector = proxy_selector
        self.dns = dns
        self.ssl_context = ssl_context
        self.proxy_authenticator = proxy_authenticator
        self._url: URL | None = None
        self._hash: int = -1

    @property
    def url(self) -> URL:
        """``scheme://host:port/`` as a :class:`~fastnet.url.URL` (what a proxy selector is asked about)."""
        url = self._url
        if url is None:
            url = URL(self.scheme + "://" + _bracket(self.host) + ":" + str(self.port) + "/")
            self._url = url
        return url

    @property
    def is_https(self) -> bool:
        return self.scheme == "https"

    def equals_non_host(self, other: Address) -> bool:
        """Equal in everything but the host (the port is compared)."""
        return (
            self.port == other.port
            and self.scheme == other.scheme
            and self.dns is other.dns
            and self.proxy_selector is other.proxy_selector
            and self.ssl_context is other.ssl_context
            and self.proxy_authenticator is other.proxy_authenticator
            and self.proxy == other.proxy
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Address):
            return NotImplemented
        return self.host == other.host and self.equals_non_host(other)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        if result is NotImplemented:
            return result  # type: ignore[no-any-return]
        return not result

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = hash(
                (
                    self.scheme,
                    self.host,
                    self.port,
                    self.proxy,
                    _ident(self.dns),
                    _ident(self.proxy_selector),
                    _ident(self.ssl_context),
                    _ident(self.proxy_authenticator),
                )
            )
            if h == -1:
                h = -2
            self._hash = h
        return h

    def __repr__(self) -> str:
        extra = "" if self.proxy is None else f", proxy={self.proxy!r}"
        return f"Address({self.scheme!r}, {self.host!r}, {self.port!r}{extra})"

    def __setattr__(self, name: str, value: Any) -> None:
        # Only reached in the pure build (compiled attributes are read-only from Python).
        if name[0] != "_" and hasattr(self, name):
            raise AttributeError("Address is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> Any:
        return (_rebuild_address, (self.scheme, self.host, self.port, self.proxy))


def _rebuild_address(scheme: str, host: str, port: int, proxy: Any) -> Address:
    return Address(scheme, host, port, proxy=proxy)


class Route:
    """One concrete way to an address: a proxy (possibly DIRECT) and the socket address to connect to.

    ``socket_address`` is ``(ip, port)`` for DIRECT and HTTP-proxy routes (for an HTTP proxy it is the
    proxy's address) and ``(origin host, origin port)`` for SOCKS routes, unresolved when the proxy
    resolves names. ``requires_tunnel`` is true for an https address through an HTTP proxy.

    >>> r = Route(Address("http", "example.com", 80), Proxy.NO_PROXY, ("93.184.216.34", 80))
    >>> str(r), r.requires_tunnel
    ('example.com at 93.184.216.34:80', False)
    """

    __slots__ = ("address", "proxy", "socket_address", "requires_tunnel", "_hash")

    def __init__(self, address: Address, proxy: Proxy, socket_address: Sequence[Any]) -> None:
        if not isinstance(address, Address):
            raise TypeError(f"Route address must be an Address, not {type(address).__name__}")
        if not isinstance(proxy, Proxy):
            raise TypeError(f"Route proxy must be a Proxy, not {type(proxy).__name__}")
        if type(socket_address) is not tuple:
            socket_address = tuple(socket_address)
        if len(socket_address) != 2:
            raise ValueError(f"Route socket_address must be (host, port), not {socket_address!r}")
        self.address = address
        self.proxy = proxy
        self.socket_address = socket_address
        self.requires_tunnel = proxy.is_http and address.scheme == "https"
        self._hash: int = -1

    @property
    def is_direct(self) -> bool:
        return self.proxy.is_direct

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Route):
            return NotImplemented
        return (
            self.socket_address == other.socket_address
            and self.proxy == other.proxy
            and self.address == other.address
        )

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        if result is NotImplemented:
            return result  # type: ignore[no-any-return]
        return not result

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = hash((self.address, self.proxy, self.socket_address))
            if h == -1:
                h = -2
            self._hash = h
        return h

    def __str__(self) -> str:
        # "<host>[:<url port>][ at|via proxy <socket ip>:<socket port>]", as in okhttp-behavior.md §3;
        # "<unresolved>" stands for a socket address only a SOCKS proxy will resolve.
        host = self.address.host
        url_port = self.address.port
        socket_host = self.socket_address[0]
        socket_port = self.socket_address[1]
        socket_ip = socket_host if is_ip_literal(socket_host) else None
        text = _bracket(host)
        if url_port != socket_port or host == socket_ip:
            text += ":" + str(url_port)
        if host != socket_ip or not self.proxy.is_direct:  # a proxy is always named, even on the same IP
            text += " at " if self.proxy.is_direct else " via proxy "
            text += "<unresolved>" if socket_ip is None else _bracket(socket_ip)
            text += ":" + str(socket_port)
        if self.proxy.is_socks:
            text += " (" + str(self.proxy) + ")"
        return text

    def __repr__(self) -> str:
        return f"Route({self.address!r}, {self.proxy!r}, {self.socket_address!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] != "_" and hasattr(self, name):
            raise AttributeError("Route is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> Any:
        return (Route, (self.address, self.proxy, self.socket_address))


class RouteDatabase:
    """The set of recently failed routes, which route selection postpones (tries last).

    ``failed(route)`` adds, ``connected(route)`` removes, ``should_postpone(route)`` tests. Thread-safe:
    writers hold a lock; the membership test is a single dict lookup, atomic under the GIL. The set
    is bounded (oldest failures are forgotten first) so a long crawl cannot grow it without limit.

    >>> db = RouteDatabase()
    >>> r = Route(Address("http", "example.com", 80), Proxy.NO_PROXY, ("127.0.0.1", 80))
    >>> db.failed(r); db.should_postpone(r)
    True
    >>> db.connected(r); db.should_postpone(r)
    False
    """

    __slots__ = ("_failed", "_lock", "max_size")

    def __init__(self, max_size: int = 8192) -> None:
        if max_size < 1:
            raise ValueError("RouteDatabase max_size must be at least 1")
        self._failed: dict[Any, None] = {}
        self._lock = threading.Lock()
        self.max_size = max_size

    def failed(self, route: Route) -> None:
        with self._lock:
            failed = self._failed
            if route in failed:
                # refresh: a route that fails again is the most recent failure
                del failed[route]
            elif len(failed) >= self.max_size:
                del failed[next(iter(failed))]
            failed[route] = None

    def connected(self, route: Route) -> None:
        with self._lock:
            self._failed.pop(route, None)

    def should_postpone(self, route: Route) -> bool:
        return route in self._failed

    def clear(self) -> None:
        with self._lock:
            self._failed.clear()

    def failed_routes(self) -> list[Route]:
        """The failed routes, oldest first (a copy)."""
        with self._lock:
            return list(self._failed)

    def __len__(self) -> int:
        return len(self._failed)

    def __repr__(self) -> str:
        return f"<RouteDatabase {len(self._failed)} failed routes>"


def reorder_for_happy_eyeballs(ips: list[Any]) -> list[Any]:
    """Interleave address families (RFC 8305 §4), starting with the family of the first address.

    ``[4a, 4b, 6a, 6b, 6c]`` → ``[4a, 6a, 4b, 6b, 6c]``. One family only, or fewer than two addresses:
    the order is kept.
    """
    n = len(ips)
    if n < 2:
        return ips
    first_v6 = ":" in ips[0]
    same: list[Any] = []
    other: list[Any] = []
    for ip in ips:
        if (":" in ip) == first_v6:
            same.append(ip)
        else:
            other.append(ip)
    if not other:
        return ips
    result: list[Any] = []
    n_same = len(same)
    n_other = len(other)
    i = 0
    while i < n_same or i < n_other:
        if i < n_same:
            result.append(same[i])
        if i < n_other:
            result.append(other[i])
        i += 1
    return result


class RouteSelector:
    """Iterates the routes to an :class:`Address`, one *selection* (one proxy's routes) at a time.

    >>> db = RouteDatabase()
    >>> selector = RouteSelector(Address("http", "example.com", 80), db,
    ...                          dns=lambda host: ["127.0.0.1", "::1"])
    >>> [str(r) for r in next(selector)]
    ['example.com at 127.0.0.1:80', 'example.com at [::1]:80']
    >>> selector.has_next()
    False

    ``dns`` is an object with ``lookup(host)`` or a callable; it returns IP strings (or objects whose
    ``str`` is one, or ``(ip, ...)`` tuples). ``events`` may have ``proxy_select_start(url)``,
    ``proxy_select_end(url, proxies)``, ``dns_start(host)`` and ``dns_end(host, ips)``. Errors are
    raised by ``next()`` (never by the constructor or ``has_next()``): a failing proxy selector as
    :class:`~fastnet.exceptions.ProxyError`, a bad port as :class:`~fastnet.exceptions.RouteError`,
    DNS failures as they come; after a DNS failure for one proxy, selection continues with the next.
    """

    __slots__ = (
        "address",
        "_db",
        "_dns",
        "_lookup",
        "_happy",
        "_proxies",
        "_next_proxy",
        "_postponed",
        "_pending_error",
        "_dns_start",
        "_dns_end",
    )

    def __init__(
        self,
        address: Address,
        route_database: RouteDatabase,
        *,
        dns: Any,
        fallback_to_direct: bool = False,
        happy_eyeballs: bool = True,
        events: Any = None,
    ) -> None:
        self.address = address
        self._db = route_database
        self._dns = dns
        lookup = getattr(dns, "lookup", None)
        if lookup is None:
            if not callable(dns):
                raise TypeError(f"dns must have a lookup(host) method or be callable, not {dns!r}")
            lookup = dns
        self._lookup = lookup
        self._happy = happy_eyeballs
        self._next_proxy = 0
        self._postponed: list[Route] = []
        self._pending_error: BaseException | None = None
        self._dns_start = getattr(events, "dns_start", None) if events is not None else None
        self._dns_end = getattr(events, "dns_end", None) if events is not None else None
        self._proxies: list[Proxy] = []
        self._select_proxies(fallback_to_direct, events)

    def _select_proxies(self, fallback_to_direct: bool, events: Any) -> None:
        address = self.address
        url = None
        if 1 <= address.port <= 65535:
            url = address.url
        if events is not None:
            start = getattr(events, "proxy_select_start", None)
            if start is not None:
                start(url)
        proxies: list[Proxy]
        explicit = address.proxy
        selector = address.proxy_selector
        if explicit is not None:
            proxies = [explicit]
        elif selector is None or url is None:
            proxies = [_DIRECT]
        else:
            try:
                proxies = self._ask_selector(selector, url)
            except ProxyError as exc:
                self._pending_error = exc
                proxies = []
            else:
                if fallback_to_direct:
                    # the seed's rule: DIRECT is tried once, after every proxy the selector named
                    proxies = [p for p in proxies if not p.is_direct]
                    proxies.append(_DIRECT)
        self._proxies = proxies
        if events is not None:
            end = getattr(events, "proxy_select_end", None)
            if end is not None:
                end(url, list(proxies))

    def _ask_selector(self, selector: Any, url: URL) -> list[Proxy]:
        try:
            answer = selector.select(url)
        except Exception as exc:
            raise ProxyError(
                f"proxy selector {selector!r} failed for {url.redacted()}: {exc!r}", url=url
            ) from exc
        if answer is None:
            return [_DIRECT]
        if isinstance(answer, (str, bytes, Proxy)) or not isinstance(answer, (list, tuple)):
            raise ProxyError(
                f"proxy selector {selector!r} returned {answer!r} for {url.redacted()};"
                " expected a list of Proxy",
                url=url,
            )
        proxies: list[Proxy] = []
        for item in answer:
            if not isinstance(item, Proxy):
                raise ProxyError(
                    f"proxy selector {selector!r} returned {item!r} in its list for {url.redacted()};"
                    " expected Proxy objects",
                    url=url,
                )
            proxies.append(item)
        if not proxies:
            return [_DIRECT]
        return proxies

    @property
    def proxies(self) -> list[Proxy]:
        """The proxies this selector iterates, in order (a copy)."""
        return list(self._proxies)

    def has_next(self) -> bool:
        """True while a selection remains: another proxy, postponed routes, or a pending error."""
        return (
            self._next_proxy < len(self._proxies)
            or len(self._postponed) > 0
            or self._pending_error is not None
        )

    def __iter__(self) -> RouteSelector:
        return self

    def __next__(self) -> list[Route]:
        error = self._pending_error
        if error is not None:
            self._pending_error = None
            raise error
        proxies = self._proxies
        while self._next_proxy < len(proxies):
            proxy = proxies[self._next_proxy]
            # advance first: a DNS failure for this proxy must not stop the next one being tried
            self._next_proxy += 1
            routes = self._routes_for(proxy)
            if routes:
                return routes
        postponed = self._postponed
        if postponed:
            self._postponed = []
            return postponed
        raise StopIteration

    def _routes_for(self, proxy: Proxy) -> list[Route]:
        """This proxy's non-postponed routes; postponed ones are set aside for the end."""
        address = self.address
        host: str
        port: int
        if proxy.is_http:
            host = proxy.host  # type: ignore[assignment]
            port = proxy.port  # type: ignore[assignment]
        else:
            host = address.host
            port = address.port
        if port < 1 or port > 65535:
            raise RouteError(f"No route to {host}:{port}; port is out of range", url=self._safe_url())
        ips: list[Any]
        if (proxy.is_socks and proxy.remote_dns) or is_ip_literal(host):
            ips = [host]
        else:
            ips = self._resolve(host)
            if self._happy:
                ips = reorder_for_happy_eyeballs(ips)
        db = self._db
        good: list[Route] = []
        for ip in ips:
            route = Route(address, proxy, (ip, port))
            if db.should_postpone(route):
                self._postponed.append(route)
            else:
                good.append(route)
        return good

    def _resolve(self, host: str) -> list[Any]:
        if self._dns_start is not None:
            self._dns_start(host)
        answer = self._lookup(host)
        ips: list[Any] = []
        if answer is not None:
            for item in answer:
                if type(item) is str:
                    ips.append(item)
                elif isinstance(item, tuple):
                    ips.append(str(item[0]))
                else:
                    ips.append(str(item))
        if not ips:
            raise UnknownHostError(
                f"{self._dns} returned no addresses for {host}", url=self._safe_url(), phase="dns"
            )
        if self._dns_end is not None:
            self._dns_end(host, list(ips))
        return ips

    def _safe_url(self) -> Any:
        if 1 <= self.address.port <= 65535:
            return self.address.url
        return None

    def __repr__(self) -> str:
        return f"<RouteSelector {self.address!r} proxies={self._proxies!r} next={self._next_proxy}>"
