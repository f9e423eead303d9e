"""``SystemDns``: the platform resolver (``getaddrinfo``), both address families, order kept."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable

from fastnet.dns._base import _strip_brackets, is_ip_literal, normalize_hostname
from fastnet.exceptions import UnknownHostError

__all__ = ["SystemDns"]


class SystemDns:
    """Resolves with the operating system's ``getaddrinfo`` (hosts file, nsswitch, resolv.conf).

    >>> SystemDns().lookup("localhost")[0] in ("127.0.0.1", "::1")
    True

    ``family`` may be ``socket.AF_INET`` or ``socket.AF_INET6`` to ask for one family only. No caching:
    wrap it in ``CachingDns`` (as :func:`fastnet.dns.default_dns` does) to cache.

    :meth:`alookup` asks the running loop's ``getaddrinfo`` (asyncio runs the call in the loop's default
    executor, uvloop in libuv's pool): the loop keeps running while the system resolves.
    """

    __slots__ = ("family",)

    def __init__(self, family: int = socket.AF_UNSPEC) -> None:
        if family not in (socket.AF_UNSPEC, socket.AF_INET, socket.AF_INET6):
            raise ValueError(f"family must be AF_UNSPEC, AF_INET or AF_INET6, not {family!r}")
        self.family = family

    def lookup(self, hostname: str) -> list[str]:
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)]
        name = normalize_hostname(hostname)
        try:
            infos = socket.getaddrinfo(name, None, self.family, socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as exc:
            raise _failure(name, exc) from exc
        return _addresses(name, infos)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` through the running loop's ``getaddrinfo``: same answers, order and errors."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)]
        name = normalize_hostname(hostname)
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, None, family=self.family, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as exc:
            raise _failure(name, exc) from exc
        return _addresses(name, infos)

    def __repr__(self) -> str:
        return "SystemDns()"


def _failure(name: str, exc: BaseException) -> UnknownHostError:
    if isinstance(exc, socket.gaierror):
        return UnknownHostError(f"{name}: {exc.strerror or exc}", phase="dns")
    return UnknownHostError(f"Broken system behaviour for dns lookup of {name}: {exc}", phase="dns")


def _addresses(name: str, infos: Iterable[tuple[int, int, int, str, tuple[object, ...]]]) -> list[str]:
    """The IPv4/IPv6 addresses of ``getaddrinfo``'s answer, first occurrence kept, order kept."""
    seen: set[str] = set()
    addresses: list[str] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = str(sockaddr[0])
        if ip not in seen:
            seen.add(ip)
            addresses.append(ip)
    if not addresses:
        raise UnknownHostError(f"{name}: the system resolver returned no addresses", phase="dns")
    return addresses
