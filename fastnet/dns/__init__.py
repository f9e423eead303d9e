"""Pluggable name resolution: the ``Dns`` protocol and resolvers to chain, cache and blacklist.

* :class:`SystemDns` - ``getaddrinfo``; :class:`UdpDns` - one DNS server over UDP/TCP;
  :class:`DohDns` - DNS over HTTPS (RFC 8484 or JSON), over fastnet's own client.
* :class:`ChainDns` - ask resolvers in order, skipping addresses in an :class:`IpBlacklist`.
* :class:`CachingDns` - TTL + LRU cache, single-flight, negative entries, stale-if-error.
* :func:`default_dns` - what ``fastnet.Client`` uses when ``dns`` is not given: ``SystemDns`` behind a
  ``CachingDns`` with a 10 s TTL (aiohttp's default). Pass ``dns=SystemDns()`` to turn caching off.
* :data:`RESILIENT` - the resilient chain ready made: cache -> system -> fallbacks, with a blacklist::

      from fastnet.dns import RESILIENT, DohDns, UdpDns
      dns = RESILIENT(UdpDns("192.0.2.53"),
                      DohDns("https://dns.google/resolve", bootstrap=["8.8.8.8"], format="json"))
      client = fastnet.Client(dns=dns)

Any callable ``f(hostname) -> list[str]`` is accepted where a ``Dns`` is (see :func:`as_dns`).

On an asyncio loop (``fastnet.AsyncClient``) every resolver here resolves without blocking it: each has
``async def alookup(hostname)`` (and ``alookup_with_ttl`` where it has ``lookup_with_ttl``) with the same
answers, order and errors as ``lookup``; :func:`alookup` and :func:`alookup_with_ttl` call it. A
resolver of your own without ``alookup`` (or a plain function) is called inline and blocks the loop while
it runs, unless it is a coroutine function (``async def f(hostname)``), which is awaited.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from fastnet.dns._base import (
    Dns,
    FunctionDns,
    alookup,
    alookup_with_ttl,
    as_dns,
    is_ip_literal,
    lookup_with_ttl,
    normalize_hostname,
)
from fastnet.dns._chain import ChainDns
from fastnet.dns._doh import BootstrapDns, DohDns
from fastnet.dns._system import SystemDns
from fastnet.dns._udp import UdpDns
from fastnet.dns.cache import CachingDns, DnsCache, IpBlacklist

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    from fastnet.dns._base import DnsLike

    class _ResilientOptions(TypedDict, total=False):
        """The keyword arguments of :func:`resilient`."""

        ttl: float
        threshold: int
        stale_if_error: float
        system: DnsLike | None


__all__ = [
    "RESILIENT",
    "BootstrapDns",
    "CachingDns",
    "ChainDns",
    "Dns",
    "DnsCache",
    "DohDns",
    "FunctionDns",
    "IpBlacklist",
    "SystemDns",
    "UdpDns",
    "alookup",
    "alookup_with_ttl",
    "as_dns",
    "default_dns",
    "is_ip_literal",
    "lookup_with_ttl",
    "normalize_hostname",
    "resilient",
    "shared_default_dns",
]

#: TTL of :func:`default_dns`'s cache, in seconds.
DEFAULT_TTL = 10.0


def default_dns() -> CachingDns:
    """A new ``CachingDns(SystemDns(), ttl=10.0)``: what a client resolves with by default."""
    return CachingDns(SystemDns(), ttl=DEFAULT_TTL)


_SHARED: CachingDns | None = None
_SHARED_LOCK = threading.Lock()


def shared_default_dns() -> CachingDns:
    """The process's ``default_dns()``, made on first use and shared by every client built without
    ``dns=``: one cache for the process, and clients that share a pool share connections (the DNS is
    part of the pool key)."""
    global _SHARED
    dns = _SHARED
    if dns is None:
        with _SHARED_LOCK:
            dns = _SHARED
            if dns is None:
                dns = _SHARED = default_dns()
    return dns


def resilient(
    *fallbacks: DnsLike,
    ttl: float = DEFAULT_TTL,
    threshold: int = 5,
    stale_if_error: float = 300.0,
    system: DnsLike | None = None,
) -> CachingDns:
    """Seed 002's chain: ``CachingDns(ChainDns([system, *fallbacks], blacklist=IpBlacklist(threshold)))``.

    >>> dns = resilient(lambda host: ["127.0.0.1"], system=lambda host: [])
    >>> dns.lookup("app.test")
    ['127.0.0.1']

    ``system`` replaces ``SystemDns()`` as the first resolver (tests use it to stay on loopback).
    """
    blacklist = IpBlacklist(threshold)
    chain = ChainDns([SystemDns() if system is None else system, *fallbacks], blacklist=blacklist)
    return CachingDns(chain, ttl=ttl, stale_if_error=stale_if_error)


class _Resilient:
    """``RESILIENT(*fallbacks)`` builds :func:`resilient`; ``RESILIENT`` itself is a ready Dns
    (cache -> system, with a blacklist) built on first use and shared by everyone who passes it."""

    __slots__ = ("_dns", "_lock")

    def __init__(self) -> None:
        self._dns: CachingDns | None = None
        self._lock = threading.Lock()

    def __call__(self, *fallbacks: DnsLike, **options: Unpack[_ResilientOptions]) -> CachingDns:
        return resilient(*fallbacks, **options)

    def _get(self) -> CachingDns:
        dns = self._dns
        if dns is None:
            with self._lock:
                if self._dns is None:
                    self._dns = resilient()
                dns = self._dns
        return dns

    def lookup(self, hostname: str) -> list[str]:
        return self._get().lookup(hostname)

    async def alookup(self, hostname: str) -> list[str]:
        return await self._get().alookup(hostname)

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        self._get().connect_failed(host, ip, error)

    def connected(self, host: str, ip: str) -> None:
        self._get().connected(host, ip)

    def __repr__(self) -> str:
        return "fastnet.dns.RESILIENT"


#: Seed 002's resilient chain. ``RESILIENT(UdpDns(...), DohDns(...))`` returns a new chain with those
#: fallbacks after the system resolver; ``dns=RESILIENT`` uses a shared chain with no fallbacks.
RESILIENT = _Resilient()
