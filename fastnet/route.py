"""``Address`` (the pooling key) and ``Route`` (one concrete way to reach it): connection routing's values.

An :class:`Address` is everything that decides whether a connection made for one request may carry
another: scheme, host, port and proxy by value, and the DNS, proxy selector, TLS context and proxy
authenticator by *identity*. A :class:`Route` is the address, the proxy chosen for it, and the socket
address to connect to (a resolved IP for DIRECT and HTTP-proxy routes; the origin host, unresolved, for
SOCKS routes whose proxy resolves names).

Compiled in place, typed by its ``.pxd``, in the compiled build. Both classes are immutable in both builds.

>>> from fastnet.route import Address, Route
>>> from fastnet.proxy import Proxy
>>> str(Route(Address("https", "example.com", 1003), Proxy.http("1.2.3.4", 5678), ("1.2.3.4", 5678)))
'example.com:1003 via proxy 1.2.3.4:5678'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastnet.proxy import Proxy
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet.authenticator import AuthenticatorLike
    from fastnet.dns._base import DnsLike
    from fastnet.proxy import ProxySelector

__all__ = ["Address", "Route", "is_ip_literal"]


def is_ip_literal(host: str) -> bool:
    """True for an IPv6 literal (any ``:``) or a dotted-quad IPv4 literal (four ASCII decimal parts of
    one to three digits, each at most 255). One pass over the characters: compiled, a C loop."""
    if ":" in host:
        return True
    dots = 0
    digits = 0
    value = 0
    for ch in host:
        if ch == ".":
            if digits == 0:
                return False
            dots += 1
            digits = 0
            value = 0
        elif "0" <= ch <= "9":
            digits += 1
            value = value * 10 + (ord(ch) - 48)
            if digits > 3 or value > 255:
                return False
        else:
            return False
    return dots == 3 and digits > 0


def _bracket(host: str) -> str:
    return "[" + host + "]" if ":" in host else host


def _ident(obj: object) -> int:
    return 0 if obj is None else id(obj)


class Address:
    """The pooling key for connections: origin, proxy choice, and the components that shape a connection.

    Equal addresses may share a pooled connection. Equality and hash cover scheme, host, port, proxy
    and the local address sockets bind to by value, and ``dns``, ``proxy_selector``, ``ssl_context``
    and ``proxy_authenticator`` by *identity* (two distinct but equal-looking DNS objects do not pool
    together).

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
        "local_address",
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
        proxy_selector: ProxySelector | None = None,
        dns: DnsLike | None = None,
        ssl_context: Any = None,  # an ssl.SSLContext for https (the engine reads it unchecked), else None
        proxy_authenticator: AuthenticatorLike | None = None,
        local_address: str | None = None,
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
        self.local_address = local_address
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
            and self.local_address == other.local_address
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
                    self.local_address,
                )
            )
            if h == -1:
                h = -2
            self._hash = h
        return h

    def __repr__(self) -> str:
        extra = "" if self.proxy is None else f", proxy={self.proxy!r}"
        return f"Address({self.scheme!r}, {self.host!r}, {self.port!r}{extra})"

    def __setattr__(self, name: str, value: object) -> None:
        # Only reached in the pure build (compiled attributes are read-only from Python).
        if name[0] != "_" and hasattr(self, name):
            raise AttributeError("Address is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_address, (self.scheme, self.host, self.port, self.proxy))


def _rebuild_address(scheme: str, host: str, port: int, proxy: Proxy | None) -> Address:
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

    def __init__(self, address: Address, proxy: Proxy, socket_address: tuple[str, int]) -> None:
        if not isinstance(address, Address):
            raise TypeError(f"Route address must be an Address, not {type(address).__name__}")
        if not isinstance(proxy, Proxy):
            raise TypeError(f"Route proxy must be a Proxy, not {type(proxy).__name__}")
        if type(socket_address) is not tuple:
            socket_address = tuple(socket_address)  # type: ignore[assignment]  # a list: (host, port)
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
        # "<host>[:<url port>][ at|via proxy <socket ip>:<socket port>]", as OkHttp's Route.toString;
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

    def __setattr__(self, name: str, value: object) -> None:
        if name[0] != "_" and hasattr(self, name):
            raise AttributeError("Route is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> tuple[object, ...]:
        return (Route, (self.address, self.proxy, self.socket_address))
