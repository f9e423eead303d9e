"""``SystemDns``: the platform resolver (``getaddrinfo``), both address families, order kept."""

from __future__ import annotations

import socket

from fastnet.dns._base import _strip_brackets, is_ip_literal, normalize_hostname
from fastnet.exceptions import UnknownHostError

__all__ = ["SystemDns"]


class SystemDns:
    """Resolves with the operating system's ``getaddrinfo`` (hosts file, nsswitch, resolv.conf).

    >>> SystemDns().lookup("localhost")[0] in ("127.0.0.1", "::1")
    True

    ``family`` may be ``socket.AF_INET`` or ``socket.AF_INET6`` to ask for one family only. No caching:
    wrap it in ``CachingDns`` (as :func:`fastnet.dns.default_dns` does) to cache.
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
        except socket.gaierror as exc:
            raise UnknownHostError(f"{name}: {exc.strerror or exc}", phase="dns") from exc
        except (OSError, UnicodeError, ValueError) as exc:
            raise UnknownHostError(
                f"Broken system behaviour for dns lookup of {name}: {exc}", phase="dns"
            ) from exc
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

    def __repr__(self) -> str:
        return "SystemDns()"
