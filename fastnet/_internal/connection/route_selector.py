"""``RouteSelector``: which sockets to open for an address, in what order.

Theory of operation. :class:`RouteSelector` iterates in two levels, as in OkHttp: proxies in order (an
explicit proxy, else the proxy selector's answer, else DIRECT; a single DIRECT appended only with
``fallback_to_direct``), and for each proxy its socket addresses (DNS runs lazily, one proxy at a time, so
a working first proxy never costs a lookup for the second). Each ``next()`` returns one *selection*: the
routes of one proxy that are not in the :class:`RouteDatabase` of recently failed routes. Postponed routes
are always tried last, all together, after every proxy's good routes. With Happy Eyeballs the addresses
of each lookup are interleaved by family (RFC 8305 §4) starting with the family DNS put first.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastnet._internal.connection.route_database import RouteDatabase
from fastnet.exceptions import ProxyError, RouteError, UnknownHostError
from fastnet.proxy import Proxy
from fastnet.route import Address, Route, is_ip_literal
from fastnet.url import URL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from fastnet.dns._base import DnsLike
    from fastnet.proxy import ProxySelector

__all__ = ["RouteSelector", "ips_of", "reorder_for_happy_eyeballs"]

_DIRECT = Proxy.NO_PROXY


def ips_of(answer: Iterable[object] | None, dns: object, host: str) -> list[str]:
    """A resolver's answer as IP strings (it may give strings, ``(ip, ...)`` tuples or address objects);
    ``UnknownHostError`` when it gave none."""
    ips: list[str] = []
    if answer is not None:
        for item in answer:
            if type(item) is str:
                ips.append(item)
            elif isinstance(item, tuple):
                ips.append(str(item[0]))
            else:
                ips.append(str(item))
    if not ips:
        raise UnknownHostError(f"{dns} returned no addresses for {host}", phase="dns")
    return ips


def reorder_for_happy_eyeballs(ips: list[str]) -> list[str]:
    """Interleave address families (RFC 8305 §4), starting with the family of the first address.

    ``[4a, 4b, 6a, 6b, 6c]`` → ``[4a, 6a, 4b, 6b, 6c]``. One family only, or fewer than two addresses:
    the order is kept.
    """
    n = len(ips)
    if n < 2:
        return ips
    first_v6 = ":" in ips[0]
    same: list[str] = []
    other: list[str] = []
    for ip in ips:
        if (":" in ip) == first_v6:
            same.append(ip)
        else:
            other.append(ip)
    if not other:
        return ips
    result: list[str] = []
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
    Errors carry no ``url``: the selector knows the address, not the request, whose URL the connect
    step fills in.
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
        dns: DnsLike,
        fallback_to_direct: bool = False,
        happy_eyeballs: bool = True,
        events: object = None,
    ) -> None:
        self.address = address
        self._db = route_database
        self._dns = dns
        lookup = getattr(dns, "lookup", None)
        if lookup is None:
            if not callable(dns):
                raise TypeError(f"dns must have a lookup(host) method or be callable, not {dns!r}")
            lookup = dns
        # the resolver's lookup, or the resolver itself (a function): its answer goes through ips_of()
        self._lookup: Callable[[str], Any] = lookup
        self._happy = happy_eyeballs
        self._next_proxy = 0
        self._postponed: list[Route] = []
        self._pending_error: BaseException | None = None
        self._dns_start = getattr(events, "dns_start", None) if events is not None else None
        self._dns_end = getattr(events, "dns_end", None) if events is not None else None
        self._proxies: list[Proxy] = []
        self._select_proxies(fallback_to_direct, events)

    def _select_proxies(self, fallback_to_direct: bool, events: object) -> None:
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
                    # DIRECT is tried once, after every proxy the selector named
                    proxies = [p for p in proxies if not p.is_direct]
                    proxies.append(_DIRECT)
        self._proxies = proxies
        if events is not None:
            end = getattr(events, "proxy_select_end", None)
            if end is not None:
                end(url, list(proxies))

    def _ask_selector(self, selector: ProxySelector, url: URL) -> list[Proxy]:
        try:
            answer = selector.select(url)
        except Exception as exc:
            raise ProxyError(f"proxy selector {selector!r} failed for {url.redacted()}: {exc!r}") from exc
        if answer is None:
            return [_DIRECT]
        if isinstance(answer, (str, bytes, Proxy)) or not isinstance(answer, (list, tuple)):
            raise ProxyError(
                f"proxy selector {selector!r} returned {answer!r} for {url.redacted()};"
                " expected a list of Proxy"
            )
        proxies: list[Proxy] = []
        for item in answer:
            if not isinstance(item, Proxy):
                raise ProxyError(
                    f"proxy selector {selector!r} returned {item!r} in its list for {url.redacted()};"
                    " expected Proxy objects"
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
        # the blocking form of the selection; the asyncio finder runs the same steps with an awaited lookup
        while True:
            target = self.next_target()
            if target is None:
                postponed = self.take_postponed()
                if postponed:
                    return postponed
                raise StopIteration
            proxy, host, port, resolve = target
            ips = self._resolve(host) if resolve else [host]
            routes = self.routes_for(proxy, port, ips)
            if routes:
                return routes

    def next_target(self) -> tuple[Proxy, str, int, bool] | None:
        """The next proxy to try: ``(proxy, host, port, resolve)``, where ``host`` is what to connect to (the
        proxy's host for an HTTP proxy, else the origin's) and ``resolve`` says whether it needs a DNS
        lookup (not for an IP literal, nor when a SOCKS proxy resolves names). None when every proxy has
        been offered; a pending error (a failing proxy selector) or a bad port is raised here."""
        error = self._pending_error
        if error is not None:
            self._pending_error = None
            raise error
        proxies = self._proxies
        if self._next_proxy >= len(proxies):
            return None
        proxy = proxies[self._next_proxy]
        # advance first: a DNS failure for this proxy must not stop the next one being tried
        self._next_proxy += 1
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
            raise RouteError(f"No route to {host}:{port}; port is out of range")
        return proxy, host, port, not ((proxy.is_socks and proxy.remote_dns) or is_ip_literal(host))

    def routes_for(self, proxy: Proxy, port: int, ips: list[str]) -> list[Route]:
        """The routes of ``proxy`` over the addresses ``ips`` (a lookup's answer, or the host itself),
        interleaved by family with Happy Eyeballs; recently failed ones are set aside for the end."""
        if self._happy and len(ips) > 1:
            ips = reorder_for_happy_eyeballs(ips)
        address = self.address
        db = self._db
        good: list[Route] = []
        for ip in ips:
            route = Route(address, proxy, (ip, port))
            if db.should_postpone(route):
                self._postponed.append(route)
            else:
                good.append(route)
        return good

    def take_postponed(self) -> list[Route]:
        """The routes set aside as recently failed, once every proxy's good routes were offered."""
        postponed = self._postponed
        self._postponed = []
        return postponed

    def _resolve(self, host: str) -> list[str]:
        if self._dns_start is not None:
            self._dns_start(host)
        ips = ips_of(self._lookup(host), self._dns, host)
        if self._dns_end is not None:
            self._dns_end(host, list(ips))
        return ips

    def __repr__(self) -> str:
        return f"<RouteSelector {self.address!r} proxies={self._proxies!r} next={self._next_proxy}>"
