"""What a load run connects to and sends: URLs grouped by connection, prebuilt requests, resolution,
and connections prepared with fastnet's own connection code.

Theory of operation
-------------------
URLs that can share a connection (same scheme, host and port) form a :class:`Group`. Each group's
requests are built once, with fastnet's ``Request`` (which validates method, URL and headers) and the
codec's ``request_head`` (origin form, or absolute form with the proxy's credentials for plain http
through an HTTP proxy), so the loop only copies bytes.

A group's connections are made one of two ways:

* **by the loop itself** (``Group.address`` is ``(family, ip, port)``): plain http, directly or to an
  HTTP proxy. The name is resolved once when the run starts (``--resolve`` overrides first, then the
  client's DNS), and that time is the run's DNS phase.
* **by a :class:`Preparer`** (``Group.address`` is ``None``): https, SOCKS, and ``Proxy.https``. A
  helper thread runs fastnet's ``ExchangeFinder`` (routes, Happy Eyeballs, the SOCKS handshake or the
  CONNECT tunnel, TLS with the client's verification settings and session cache) once per connection,
  timing DNS, TCP connect and TLS through fastnet's ``EventListener`` callbacks, and hands the socket to
  the loop.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import fastnet
from fastnet._internal._sync.exchange_finder import ExchangeFinder
from fastnet._internal.connection.connection_user import ConnectionUser
from fastnet._internal.http1.codec import request_head
from fastnet._version import __version__
from fastnet.dns import as_dns, default_dns, is_ip_literal
from fastnet.exceptions import FastnetError, NetworkError, UnknownHostError
from fastnet.headers import Headers
from fastnet.proxy import Proxy, ProxyType
from fastnet.request import Request
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet.dns._base import DnsLike
    from fastnet.route import Route

#: ``deliver(index, sock, error, phases)``: a connection made for the loop, or why there is none.
Deliver = Callable[[int, "socket.socket | None", "BaseException | None", "tuple[int, int, int] | None"], None]

__all__ = [
    "USER_AGENT",
    "Group",
    "LoadError",
    "OverrideDns",
    "Preparer",
    "build_request",
    "default_resolver",
    "parse_resolve",
    "plan_groups",
    "resolve_address",
    "spread",
]

USER_AGENT = f"fastnet-load/{__version__}"


class LoadError(FastnetError):
    """A load run cannot start: a URL, proxy or name that does not work, an unsupported combination."""


@dataclass
class Group:
    """URLs sharing connections: their requests, and how the loop gets a connection for them."""

    url: URL
    urls: list[URL]
    requests: list[bytes]
    #: ``(family, ip, port)`` when the loop connects itself; ``None`` when a Preparer does.
    address: tuple[int, str, int] | None
    #: ``host:port`` for messages.
    label: str
    #: Time the start-up resolution took (µs), or -1 when nothing was resolved.
    dns_us: int = -1
    weight: int = 1
    connections: int = field(default=0)


def parse_resolve(text: str) -> tuple[str, int, str]:
    """``host:port:addr`` (curl's ``--resolve``; ``addr`` may be a bracketed IPv6 literal)."""
    host, sep, rest = text.partition(":")
    port_text, sep2, addr = rest.partition(":")
    if not sep or not sep2 or not host or not addr:
        raise ValueError(f"--resolve wants host:port:addr, not {text!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--resolve: bad port {port_text!r} in {text!r}") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"--resolve: port {port} is out of range 1-65535")
    if addr.startswith("[") and addr.endswith("]"):
        addr = addr[1:-1]
    if not is_ip_literal(addr):
        raise ValueError(f"--resolve: {addr!r} is not an IP address")
    return host.lower().rstrip("."), port, addr


class OverrideDns:
    """A ``Dns``: the ``--resolve`` address for a host when one was given, else ``fallback``."""

    def __init__(self, overrides: dict[str, str], fallback: DnsLike) -> None:
        self.overrides = overrides
        self.fallback = as_dns(fallback)

    def lookup(self, hostname: str) -> list[str]:
        addr = self.overrides.get(hostname.lower().rstrip("."))
        if addr is not None:
            return [addr]
        answer: list[str] = self.fallback.lookup(hostname)
        return answer


def build_request(
    url: URL,
    method: str,
    headers: Sequence[tuple[str, str]],
    body: bytes | None,
    *,
    keepalive: bool,
    proxy: Proxy | None,
) -> bytes:
    """The request bytes for ``url``: Host, User-Agent, Accept, the caller's headers (which replace
    defaults of the same name), Content-Length for a body, ``Connection: close`` without keep-alive."""
    hdrs = Headers([("Host", url.host_header), ("User-Agent", USER_AGENT), ("Accept", "*/*")])
    for name, value in headers:
        hdrs = (
            hdrs.set(name, value)
            if name.lower() in ("host", "user-agent", "accept")
            else hdrs.add(name, value)
        )
    if body is not None or method in ("POST", "PUT", "PATCH"):
        if "content-length" not in hdrs:
            hdrs = hdrs.add("Content-Length", str(len(body or b"")))
    if not keepalive:
        hdrs = hdrs.set("Connection", "close")
    request = Request(method, url, headers=hdrs)
    http_proxy = proxy is not None and proxy.type is ProxyType.HTTP and not url.is_https
    authorization = proxy.authorization if http_proxy and proxy is not None else None
    return request_head(request, http_proxy, authorization) + (body or b"")


def resolve_address(host: str, port: int, dns: DnsLike) -> tuple[tuple[int, str, int], int]:
    """``((family, ip, port), dns_us)`` for ``host``; ``dns_us`` is -1 for an IP literal."""
    if is_ip_literal(host):
        ip = host.strip("[]")
        dns_us = -1
    else:
        t0 = time.monotonic_ns()
        try:
            answer = as_dns(dns).lookup(host)
        except NetworkError as exc:
            raise LoadError(f"cannot resolve {host}: {exc}") from exc
        dns_us = (time.monotonic_ns() - t0) // 1000
        if not answer:
            raise LoadError(f"cannot resolve {host}: no addresses")
        ip = str(answer[0])
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    return (family, ip, port), dns_us


def plan_groups(
    urls: Sequence[URL],
    *,
    method: str,
    headers: Sequence[tuple[str, str]],
    body: bytes | None,
    keepalive: bool,
    proxy: Proxy | None,
    dns: DnsLike,
) -> list[Group]:
    """Group ``urls`` by connection and build their requests; resolve what the loop connects to."""
    groups: dict[tuple[str, str, int], Group] = {}
    for url in urls:
        if url.username or url.password:
            raise LoadError(
                f"credentials in the URL are not supported: {url.redacted()} (use -H Authorization)"
            )
        key = (url.scheme, url.host, url.port)
        data = build_request(url, method, headers, body, keepalive=keepalive, proxy=proxy)
        group = groups.get(key)
        if group is None:
            host = f"[{url.host}]" if ":" in url.host else url.host
            group = Group(url=url, urls=[], requests=[], address=None, label=f"{host}:{url.port}")
            groups[key] = group
        group.urls.append(url)
        group.requests.append(data)
    for group in groups.values():
        group.weight = len(group.urls)
        url = group.url
        if url.is_https and proxy is not None and proxy.type is ProxyType.HTTP and proxy.tls:
            raise LoadError("https through an https proxy (TLS inside TLS) is not supported by fastnet load")
        if url.is_https or (proxy is not None and (proxy.type is ProxyType.SOCKS or proxy.tls)):
            continue  # a Preparer makes these connections
        if proxy is not None and proxy.type is ProxyType.HTTP:
            assert proxy.host is not None and proxy.port is not None
            group.address, group.dns_us = resolve_address(proxy.host, proxy.port, dns)
        else:
            group.address, group.dns_us = resolve_address(url.host, url.port, dns)
    return list(groups.values())


class _Phases(fastnet.EventListener):
    """Times DNS, TCP connect and TLS of one connection setup (µs; -1 when a phase did not happen)."""

    def __init__(self) -> None:
        self.marks: dict[str, int] = {}
        self.dns = -1
        self.connect = -1
        self.tls = -1

    def dns_start(self, call: ConnectionUser, host: str) -> None:
        self.marks["dns"] = time.monotonic_ns()

    def dns_end(self, call: ConnectionUser, host: str, addresses: list[str]) -> None:
        if "dns" in self.marks:
            self.dns = (time.monotonic_ns() - self.marks.pop("dns")) // 1000

    def connect_start(self, call: ConnectionUser, route: Route) -> None:
        self.marks["connect"] = time.monotonic_ns()

    def secure_connect_start(self, call: ConnectionUser) -> None:
        now = time.monotonic_ns()
        self.marks["tls"] = now
        start = self.marks.get("connect")
        if start is not None and self.connect < 0:
            self.connect = (now - start) // 1000  # TCP (and any tunnel) up to the TLS handshake

    def secure_connect_end(self, call: ConnectionUser, tls_version: str | None) -> None:
        if "tls" in self.marks:
            self.tls = (time.monotonic_ns() - self.marks.pop("tls")) // 1000

    def connect_end(self, call: ConnectionUser, route: Route) -> None:
        start = self.marks.get("connect")
        if start is not None and self.connect < 0:
            self.connect = (time.monotonic_ns() - start) // 1000


class _SetupUser(ConnectionUser):
    """The connection layer's view of one connection setup: no call, no deadline, its own listener.

    It also sets the fields a newer ``ConnectionUser`` has (no body limit, no route to retry first, no
    queueing): this subclass has a ``__dict__``, so they are harmless where the base class lacks them.
    """

    def __init__(self, events: fastnet.EventListener) -> None:
        self.events = events
        self.canceled = False
        self.timed_out = False
        self.deadline = 0.0
        self.connection = None
        self.finder = None
        self.exchange = None
        self.last_failure = None
        self.max_body_size = 0
        self.reusable = False
        self.retry_route = None
        self.started_at = time.monotonic()
        self.queued = 0.0


class Preparer:
    """Opens connections with fastnet's connection code in helper threads (see the module docs).

    ``submit(index, group)`` starts one; ``deliver(index, sock, error, phases)`` receives it. ``close()``
    cancels what is still connecting and closes the client.
    """

    def __init__(
        self,
        groups: Sequence[Group],
        *,
        proxy: Proxy | None,
        verify: bool | str,
        dns: DnsLike,
        timeout: float,
        threads: int,
        deliver: Deliver | None = None,
    ) -> None:
        self.groups = list(groups)
        self.timeout = timeout
        self.deliver = deliver
        self.client = fastnet.Client(
            proxy=proxy if proxy is not None else Proxy.NO_PROXY,
            verify=verify,
            dns=dns,
            connect_timeout=timeout,
            read_timeout=timeout,
            write_timeout=timeout,
            trust_env=False,
            user_agent=USER_AGENT,
        )
        self.connector = self.client._core.connector
        self.executor = ThreadPoolExecutor(
            max_workers=max(1, threads), thread_name_prefix="fastnet-load-setup"
        )
        self._lock = threading.Lock()
        self._finders: set[ExchangeFinder] = set()
        self._closed = False

    def submit(self, index: int, group: int) -> None:
        self.executor.submit(self._open, index, self.groups[group].url)

    def open(self, url: URL) -> tuple[socket.socket, tuple[int, int, int]]:
        """A connected socket for ``url`` (plain or TLS, tunnelled if need be) and its phase times."""
        phases = _Phases()
        user = _SetupUser(phases)
        finder = ExchangeFinder(self.connector, user, self.connector.address_of(url, None))
        with self._lock:
            if self._closed:
                raise LoadError("the run has ended")
            self._finders.add(finder)
        try:
            conn = finder.find(self.timeout, self.timeout)
        finally:
            with self._lock:
                self._finders.discard(finder)
        sock = conn.sock
        if not isinstance(sock, (socket.socket,)):
            conn.close()
            raise LoadError(f"unsupported connection type {type(sock).__name__}")
        return sock, (phases.dns, phases.connect, phases.tls)

    def _open(self, index: int, url: URL) -> None:
        deliver = self.deliver
        assert deliver is not None
        try:
            sock, phases = self.open(url)
        except Exception as exc:  # noqa: BLE001 - every failure is the connection's error, reported
            if isinstance(exc, UnknownHostError):
                exc = LoadError(f"cannot resolve {url.host}: {exc}")
            deliver(index, None, exc, None)
            return
        deliver(index, sock, None, phases)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            finders = list(self._finders)
        for finder in finders:
            finder.cancel()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.client.close()


def spread(groups: Sequence[Group], connections: int) -> list[int]:
    """The group of each connection: every group at least one, the rest by the groups' URL counts."""
    if connections < len(groups):
        raise LoadError(f"{len(groups)} different hosts need at least as many connections (-c {len(groups)})")
    total = sum(g.weight for g in groups)
    counts = [1] * len(groups)
    left = connections - len(groups)
    shares = [left * g.weight / total for g in groups]
    for i, share in enumerate(shares):
        counts[i] += int(share)
    rest = connections - sum(counts)
    order = sorted(range(len(groups)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in order[:rest]:
        counts[i] += 1
    out: list[int] = []
    for i, n in enumerate(counts):
        groups[i].connections = n
        out.extend([i] * n)
    return out


def default_resolver(overrides: Iterable[tuple[str, int, str]]) -> OverrideDns:
    """The run's DNS: ``--resolve`` entries (by host) in front of fastnet's default cached resolver."""
    return OverrideDns({host: addr for host, _port, addr in overrides}, default_dns())
