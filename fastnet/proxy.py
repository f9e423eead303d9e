"""Proxies and the selectors that choose them.

Theory of operation: a :class:`Proxy` is an immutable value naming how to reach an origin: ``DIRECT``,
through an HTTP proxy (optionally spoken to over TLS: ``Proxy.https``), or through a SOCKS4a/SOCKS5
proxy. Every check happens at construction, so a bad proxy fails where it is configured, not in the
middle of a crawl. Proxies are hashable and compare by value (credentials included) because they are
part of the connection pool's key (:class:`fastnet.route.Address`): two requests through different
proxies, or as different proxy users, never share a connection.

A :class:`ProxySelector` maps a URL to the proxies to try, in order; ``[]`` or ``None`` means DIRECT.
:class:`EnvProxySelector` reads ``http_proxy``/``https_proxy``/``all_proxy``/``no_proxy`` once, when it
is built (one environment read per client, never per request).
"""

from __future__ import annotations

import base64
import enum
import ipaddress
import os
import re
from collections.abc import Mapping
from typing import Protocol, runtime_checkable
from urllib.parse import unquote

from fastnet.url import URL, mask_password

__all__ = ["EnvProxySelector", "NullProxySelector", "Proxy", "ProxySelector", "ProxyType"]


class ProxyType(enum.Enum):
    """How a connection reaches its origin."""

    DIRECT = "DIRECT"
    HTTP = "HTTP"
    SOCKS = "SOCKS"

    def __repr__(self) -> str:
        return f"ProxyType.{self.name}"


_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080, "socks4": 1080, "socks4a": 1080}
_BAD_HOST_CHARS = re.compile(r"[\x00-\x20\x7f/\\?#@\[\]<>\"`{}|^%]")


def _normalize_host(host: object) -> str:
    if not isinstance(host, str):
        raise TypeError(f"proxy host must be a str, not {type(host).__name__}")
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text:
        raise ValueError("proxy host must not be empty")
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text).compressed
        except ValueError:
            raise ValueError(f"invalid proxy host {host!r}: not an IPv6 address") from None
    if _BAD_HOST_CHARS.search(text):
        raise ValueError(f"invalid proxy host {host!r}")
    text = text.lower().rstrip(".")
    if not text.isascii():
        try:
            text = text.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"invalid proxy host {host!r}: {exc}") from None
    return text


def _check_credential(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"proxy {what} must be a str or None, not {type(value).__name__}")
    return value


class Proxy:
    """One way to reach an origin: DIRECT, an HTTP(S) proxy, or a SOCKS4a/SOCKS5 proxy.

    >>> Proxy.from_url("http://bob:pw@proxy.example:3128")
    Proxy('http://bob:***@proxy.example:3128')
    >>> str(Proxy.socks("127.0.0.1", 1080))
    'socks5h://127.0.0.1:1080'
    >>> Proxy.http("10.0.0.1", 8080, "bob", "pw").authorization
    'Basic Ym9iOnB3'

    ``tls`` is true for :meth:`https` (TLS to the proxy itself). ``remote_dns`` is true when a SOCKS
    proxy receives the origin host name unresolved (``socks5h://``, ``socks4a://``); false means the
    client resolves it (``socks5://``, ``socks4://``). Invalid combinations raise ``ValueError``.
    """

    __slots__ = (
        "type",
        "host",
        "port",
        "username",
        "password",
        "tls",
        "socks_version",
        "remote_dns",
        "is_direct",
        "is_http",
        "is_socks",
        "authorization",
        "_key",
        "_hash",
    )

    type: ProxyType
    host: str | None
    port: int | None
    username: str | None
    password: str | None
    tls: bool
    socks_version: int | None
    remote_dns: bool
    is_direct: bool
    is_http: bool
    is_socks: bool
    #: ``"Basic <base64>"`` for an HTTP proxy with credentials, else ``None``.
    authorization: str | None
    # (type, host, port, username, password, tls, socks_version, remote_dns): equality and hash
    _key: tuple[ProxyType, str | None, int | None, str | None, str | None, bool, int | None, bool]
    _hash: int

    NO_PROXY: Proxy  # set below

    def __init__(
        self,
        type: ProxyType,  # noqa: A002 - mirrors the attribute name
        host: str | None = None,
        port: int | None = None,
        *,
        username: str | None = None,
        password: str | None = None,
        tls: bool = False,
        socks_version: int | None = None,
        remote_dns: bool = True,
    ) -> None:
        if not isinstance(type, ProxyType):
            raise TypeError(f"proxy type must be a ProxyType, not {type!r}")
        username = _check_credential(username, "username")
        password = _check_credential(password, "password")
        set_ = object.__setattr__
        if type is ProxyType.DIRECT:
            if host is not None or port is not None:
                raise ValueError(f"a DIRECT proxy has no address (got host={host!r}, port={port!r})")
            if username is not None or password is not None:
                raise ValueError("a DIRECT proxy cannot carry credentials")
            if tls:
                raise ValueError("a DIRECT proxy cannot use TLS")
            if socks_version is not None:
                raise ValueError("a DIRECT proxy has no SOCKS version")
            norm_host, remote_dns, version = None, False, None
        else:
            if host is None or port is None:
                raise ValueError(f"a {type.name} proxy needs a host and a port")
            norm_host = _normalize_host(host)
            if isinstance(port, bool) or not isinstance(port, int):
                raise TypeError(f"proxy port must be an int, not {port!r}")
            if not 1 <= port <= 65535:
                raise ValueError(f"proxy port {port} is out of range 1-65535")
            if password is not None and username is None:
                raise ValueError("a proxy password needs a username")
            if type is ProxyType.HTTP:
                if socks_version is not None:
                    raise ValueError("an HTTP proxy has no SOCKS version")
                if username is not None and ":" in username:
                    raise ValueError("an HTTP proxy username must not contain ':' (RFC 7617)")
                remote_dns = False
                version = None
            else:
                version = 5 if socks_version is None else socks_version
                if version not in (4, 5):
                    raise ValueError(f"SOCKS version must be 4 or 5, not {socks_version!r}")
                if tls:
                    raise ValueError("TLS to a SOCKS proxy is not supported")
                if version == 4 and password is not None:
                    raise ValueError("SOCKS4 has no password (only a user id)")
                if version == 5:
                    for what, value in (("username", username), ("password", password)):
                        if value is not None and not 1 <= len(value.encode("utf-8")) <= 255:
                            raise ValueError(f"a SOCKS5 {what} must be 1-255 bytes long")
                remote_dns = bool(remote_dns)
        set_(self, "type", type)
        set_(self, "host", norm_host)
        set_(self, "port", port)
        set_(self, "username", username)
        set_(self, "password", password)
        set_(self, "tls", bool(tls))
        set_(self, "socks_version", version)
        set_(self, "remote_dns", remote_dns)
        set_(self, "is_direct", type is ProxyType.DIRECT)
        set_(self, "is_http", type is ProxyType.HTTP)
        set_(self, "is_socks", type is ProxyType.SOCKS)
        auth = None
        if type is ProxyType.HTTP and username is not None:
            raw = f"{username}:{password or ''}".encode()
            auth = "Basic " + base64.b64encode(raw).decode("ascii")
        set_(self, "authorization", auth)
        key = (type, norm_host, port, username, password, bool(tls), version, remote_dns)
        set_(self, "_key", key)
        set_(self, "_hash", hash(key))

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def http(cls, host: str, port: int, username: str | None = None, password: str | None = None) -> Proxy:
        """A plain-text HTTP proxy (``CONNECT`` for https origins)."""
        return cls(ProxyType.HTTP, host, port, username=username, password=password)

    @classmethod
    def https(cls, host: str, port: int, username: str | None = None, password: str | None = None) -> Proxy:
        """An HTTP proxy reached over TLS (the proxy's own certificate is verified)."""
        return cls(ProxyType.HTTP, host, port, username=username, password=password, tls=True)

    @classmethod
    def socks(
        cls,
        host: str,
        port: int,
        version: int = 5,
        username: str | None = None,
        password: str | None = None,
        remote_dns: bool = True,
    ) -> Proxy:
        """A SOCKS5 (or SOCKS4a with ``version=4``) proxy; ``username`` is the user id for SOCKS4."""
        return cls(
            ProxyType.SOCKS,
            host,
            port,
            username=username,
            password=password,
            socks_version=version,
            remote_dns=remote_dns,
        )

    @classmethod
    def from_url(cls, url: str) -> Proxy:
        """Parse ``scheme://[user[:password]@]host[:port]``.

        Schemes: ``http`` (default when missing), ``https``, ``socks5``, ``socks5h``, ``socks4``,
        ``socks4a``. Default ports: 80, 443, 1080. Userinfo is percent-decoded.
        """
        if isinstance(url, Proxy):
            return url
        if not isinstance(url, str):
            raise TypeError(f"proxy URL must be a str, not {type(url).__name__}")
        text = url.strip()
        if not text:
            raise ValueError("empty proxy URL")
        if "://" in text:
            scheme, _, rest = text.partition("://")
            scheme = scheme.lower()
        else:
            scheme, rest = "http", text
        if scheme not in _DEFAULT_PORTS:
            raise ValueError(f"unsupported proxy scheme {scheme!r} in {mask_password(text)!r}")
        if rest.endswith("/"):
            rest = rest[:-1]
        if any(ch in rest for ch in "/?#") or not rest:
            raise ValueError(f"invalid proxy URL {mask_password(text)!r}: expected scheme://host:port")
        username = password = None
        if "@" in rest:
            userinfo, _, rest = rest.rpartition("@")
            user, sep, pw = userinfo.partition(":")
            username = unquote(user)
            password = unquote(pw) if sep else None
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                raise ValueError(f"invalid proxy URL {mask_password(text)!r}: unterminated IPv6 literal")
            host, port_part = rest[: end + 1], rest[end + 1 :]
            if port_part and not port_part.startswith(":"):
                raise ValueError(f"invalid proxy URL {mask_password(text)!r}: junk after the IPv6 literal")
            port_text = port_part[1:] if port_part else ""
        else:
            host, _, port_text = rest.partition(":")
        if port_text:
            if not (port_text.isascii() and port_text.isdigit()):
                raise ValueError(f"invalid proxy port {port_text!r} in {mask_password(text)!r}")
            port = int(port_text)
        else:
            port = _DEFAULT_PORTS[scheme]
        if not 1 <= port <= 65535:
            raise ValueError(f"proxy port {port} is out of range 1-65535 in {mask_password(text)!r}")
        if scheme in ("http", "https"):
            return cls(
                ProxyType.HTTP, host, port, username=username, password=password, tls=scheme == "https"
            )
        return cls(
            ProxyType.SOCKS,
            host,
            port,
            username=username,
            password=password,
            socks_version=5 if scheme.startswith("socks5") else 4,
            remote_dns=scheme in ("socks5h", "socks4a"),
        )

    # -- derived values -------------------------------------------------------------------------

    @property
    def scheme(self) -> str:
        """``http``, ``https``, ``socks5``, ``socks5h``, ``socks4``, ``socks4a`` or ``direct``."""
        if self.is_direct:
            return "direct"
        if self.is_http:
            return "https" if self.tls else "http"
        if self.socks_version == 5:
            return "socks5h" if self.remote_dns else "socks5"
        return "socks4a" if self.remote_dns else "socks4"

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the proxy, ``None`` for DIRECT."""
        if self.host is None or self.port is None:
            return None
        return (self.host, self.port)

    def _render(self, password: str) -> str:
        if self.is_direct:
            return "DIRECT"
        assert self.host is not None
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = ""
        if self.username is not None:
            user = self.username + (f":{password}" if self.password is not None and password else "") + "@"
        return f"{self.scheme}://{user}{host}:{self.port}"

    def __str__(self) -> str:
        return self._render("")

    def __repr__(self) -> str:
        if self.is_direct:
            return "Proxy.NO_PROXY"
        return f"Proxy({self._render('***')!r})"

    # -- value semantics ------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Proxy):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Proxy is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Proxy is immutable")

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild,
            (
                self.type,
                self.host,
                self.port,
                self.username,
                self.password,
                self.tls,
                self.socks_version,
                self.remote_dns,
            ),
        )


def _rebuild(
    type_: ProxyType,
    host: str | None,
    port: int | None,
    username: str | None,
    password: str | None,
    tls: bool,
    version: int | None,
    remote_dns: bool,
) -> Proxy:
    if type_ is ProxyType.DIRECT:
        return Proxy.NO_PROXY
    return Proxy(
        type_,
        host,
        port,
        username=username,
        password=password,
        tls=tls,
        socks_version=version,
        remote_dns=remote_dns,
    )


Proxy.NO_PROXY = Proxy(ProxyType.DIRECT)


@runtime_checkable
class ProxySelector(Protocol):
    """Chooses the proxies to try for a URL, in order.

    ``select`` returns a list of :class:`Proxy` (``[]`` or ``None`` means DIRECT); ``connect_failed`` is
    told when connecting through one of them failed, so a selector can rotate or rest a bad proxy.

    >>> class RoundRobin:
    ...     def __init__(self, proxies): self.proxies = list(proxies)
    ...     def select(self, url): self.proxies.append(self.proxies.pop(0)); return list(self.proxies)
    ...     def connect_failed(self, url, address, error): pass
    """

    def select(self, url: URL) -> list[Proxy] | None: ...

    def connect_failed(self, url: URL, address: tuple[str, int], error: BaseException) -> None: ...


class NullProxySelector:
    """A selector that always answers DIRECT (``[]``).

    >>> NullProxySelector().select(URL("http://example.com/"))
    []
    """

    __slots__ = ()

    def select(self, url: URL) -> list[Proxy]:
        return []

    def connect_failed(self, url: URL, address: tuple[str, int], error: BaseException) -> None:
        return None

    def __repr__(self) -> str:
        return "NullProxySelector()"


# -- no_proxy --------------------------------------------------------------------------------------

_IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class _NoProxy:
    """A parsed ``no_proxy`` value: ``*``, host suffixes, ``host:port``, IP literals and CIDR ranges."""

    __slots__ = ("everything", "names", "ips", "networks")

    def __init__(self, value: str) -> None:
        self.everything = False
        # (suffix, port or None); "example.com" matches example.com and any subdomain of it
        self.names: list[tuple[str, int | None]] = []
        self.ips: list[tuple[str, int | None]] = []
        self.networks: list[_IPNetwork] = []
        for entry in re.split(r"[,\s]+", value.strip()):
            if entry:
                self._add(entry.lower())

    def _add(self, entry: str) -> None:
        if entry == "*":
            self.everything = True
            return
        if "/" in entry:
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                pass  # like curl: an entry that means nothing is ignored
            return
        port: int | None = None
        host = entry
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return
            rest = host[end + 1 :]
            host = host[1:end]
            if rest.startswith(":") and rest[1:].isdigit():
                port = int(rest[1:])
        elif host.count(":") == 1:
            name, _, port_text = host.partition(":")
            if not port_text.isdigit():
                return
            host, port = name, int(port_text)
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            name = host.lstrip("*").lstrip(".").rstrip(".")
            if name:
                self.names.append((name, port))
            return
        self.ips.append((ip.compressed, port))

    def matches(self, host: str, port: int) -> bool:
        if self.everything:
            return True
        host = host.lower().rstrip(".")
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = None
        if ip is not None:
            text = ip.compressed
            for value, entry_port in self.ips:
                if value == text and (entry_port is None or entry_port == port):
                    return True
            for network in self.networks:
                if ip.version == network.version and ip in network:
                    return True
            return False
        for suffix, entry_port in self.names:
            if entry_port is not None and entry_port != port:
                continue
            if host == suffix or host.endswith("." + suffix):
                return True
        return False


class EnvProxySelector:
    """The proxies named by the environment, read once when the selector is built.

    Variables (lowercase wins over uppercase, as in curl): ``http_proxy`` for http URLs,
    ``https_proxy`` for https URLs, ``all_proxy`` for either when the specific one is unset, and
    ``no_proxy``: comma or space separated host suffixes (``example.com`` and ``.example.com`` both
    match the domain and its subdomains), ``host:port``, ``*``, IPv4/IPv6 literals and CIDR ranges.
    Uppercase ``HTTP_PROXY`` is ignored when ``REQUEST_METHOD`` is set (a CGI environment, where a
    request's ``Proxy:`` header becomes ``HTTP_PROXY``: "httpoxy"). A malformed proxy URL raises
    ``ValueError`` naming the variable.

    >>> env = {"https_proxy": "http://10.0.0.1:3128", "no_proxy": "localhost,10.0.0.0/8"}
    >>> selector = EnvProxySelector(env)
    >>> selector.select(URL("https://example.com/"))
    [Proxy('http://10.0.0.1:3128')]
    >>> selector.select(URL("https://10.1.2.3/"))
    []
    """

    __slots__ = ("http", "https", "no_proxy", "_no_proxy")

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        cgi = "REQUEST_METHOD" in env

        def get(name: str) -> tuple[str, str] | None:
            for key in (name, name.upper()):
                if key == "HTTP_PROXY" and cgi:
                    continue
                value = env.get(key, "").strip()
                if value:
                    return key, value
            return None

        def parse(found: tuple[str, str] | None) -> Proxy | None:
            if found is None:
                return None
            key, value = found
            try:
                return Proxy.from_url(value)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"${key}: {exc}") from None

        every = parse(get("all_proxy"))
        #: The proxy for http URLs, or ``None``.
        self.http: Proxy | None = parse(get("http_proxy")) or every
        #: The proxy for https URLs, or ``None``.
        self.https: Proxy | None = parse(get("https_proxy")) or every
        no_proxy = get("no_proxy")
        #: The raw ``no_proxy`` value ("" when unset).
        self.no_proxy: str = no_proxy[1] if no_proxy else ""
        self._no_proxy = _NoProxy(self.no_proxy)

    def select(self, url: URL) -> list[Proxy]:
        proxy = self.https if url.scheme == "https" else self.http
        if proxy is None or self._no_proxy.matches(url.host, url.port):
            return []
        return [proxy]

    def connect_failed(self, url: URL, address: tuple[str, int], error: BaseException) -> None:
        return None

    def bypasses(self, host: str, port: int) -> bool:
        """True when ``no_proxy`` says ``host:port`` is reached directly."""
        return self._no_proxy.matches(host, port)

    def __repr__(self) -> str:
        return f"EnvProxySelector(http={self.http!s}, https={self.https!s}, no_proxy={self.no_proxy!r})"
