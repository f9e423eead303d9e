"""``ChainDns``: ask resolvers in order, skip blacklisted addresses, fall back to everything seen.

Theory of operation (a chain of responsibility, made explicit):

1. IP literals are returned at once; other names are validated and IDNA-encoded first.
2. Each resolver is asked in turn. Its answer is added to ``collected`` (order kept, no duplicates),
   then the blacklisted addresses for this host are removed from it. A non-empty remainder wins and
   is returned; an empty one (or a failure) moves on to the next resolver.
3. When no resolver wins, the blacklist is cleared for the host (so a host whose every address got
   blacklisted recovers instead of failing forever) and the collected answers are returned; if
   nothing at all was found, ``UnknownHostError`` lists every resolver's failure.

The chain owns no cache: put a ``CachingDns`` in front of it (``fastnet.dns.RESILIENT`` does).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastnet.dns._base import (
    _strip_brackets,
    as_dns,
    forward_connect_failed,
    forward_connected,
    is_ip_literal,
    lookup_with_ttl,
    normalize_hostname,
)
from fastnet.exceptions import UnknownHostError

__all__ = ["ChainDns"]


class ChainDns:
    """Resolvers asked in order; the first non-empty, non-blacklisted answer wins.

    >>> from fastnet.dns import IpBlacklist
    >>> def broken(host): raise OSError("no network")
    >>> chain = ChainDns([broken, lambda host: ["127.0.0.1"]], blacklist=IpBlacklist())
    >>> chain.lookup("app.test")
    ['127.0.0.1']

    Connect hooks (``connect_failed``/``connected``) update ``blacklist`` and are forwarded to every
    resolver in the chain that has them.
    """

    __slots__ = ("resolvers", "blacklist")

    def __init__(self, resolvers: Iterable[Any], blacklist: Any = None) -> None:
        self.resolvers = tuple(as_dns(r) for r in resolvers)
        if not self.resolvers:
            raise ValueError("ChainDns needs at least one resolver")
        self.blacklist = blacklist

    def lookup(self, hostname: str) -> list[str]:
        return self.lookup_with_ttl(hostname)[0]

    def lookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """Like :meth:`lookup`, plus the winning resolver's TTL (``None`` when unknown)."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        name = normalize_hostname(hostname)
        blacklist = self.blacklist
        collected: list[str] = []
        seen: set[str] = set()
        failures: list[str] = []
        ttls: list[float] = []
        for resolver in self.resolvers:
            try:
                addresses, ttl = lookup_with_ttl(resolver, name)
            except (ValueError, TypeError):
                raise
            except Exception as exc:  # noqa: BLE001 - a broken resolver must not end the chain
                # the message, not str(): an UnknownHostError adds "(dns)", inside this sentence too
                failures.append(f"{resolver!r}: {exc.message if isinstance(exc, UnknownHostError) else exc}")
                continue
            for ip in addresses:
                if ip not in seen:
                    seen.add(ip)
                    collected.append(ip)
            if ttl is not None:
                ttls.append(ttl)
            usable = blacklist.filter(name, addresses) if blacklist is not None else addresses
            if usable:
                return list(usable), ttl
            failures.append(
                f"{resolver!r}: " + ("all addresses blacklisted" if addresses else "no addresses")
            )
        if blacklist is not None:
            blacklist.clear(name)
        if collected:
            return collected, (min(ttls) if ttls else None)
        raise UnknownHostError(f"Unable to resolve {name}: " + "; ".join(failures), phase="dns")

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        """Route-layer hook: count a failed connect in the blacklist and tell the resolvers."""
        if self.blacklist is not None:
            self.blacklist.record_failure(host, ip)
        for resolver in self.resolvers:
            forward_connect_failed(resolver, host, ip, error)

    def connected(self, host: str, ip: str) -> None:
        """Route-layer hook: reset the failure count and tell the resolvers."""
        if self.blacklist is not None:
            self.blacklist.record_success(host, ip)
        for resolver in self.resolvers:
            forward_connected(resolver, host, ip)

    def __repr__(self) -> str:
        return "ChainDns([" + ", ".join(repr(r) for r in self.resolvers) + "])"
