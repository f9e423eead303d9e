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
from typing import TYPE_CHECKING

from fastnet.dns._base import (
    _strip_brackets,
    alookup_with_ttl,
    as_dns,
    forward_connect_failed,
    forward_connected,
    is_ip_literal,
    lookup_with_ttl,
    normalize_hostname,
)
from fastnet.exceptions import UnknownHostError

if TYPE_CHECKING:
    from fastnet.dns._base import Dns, DnsLike
    from fastnet.dns.cache import IpBlacklist

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

    def __init__(self, resolvers: Iterable[DnsLike], blacklist: IpBlacklist | None = None) -> None:
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
        walk = _Walk(normalize_hostname(hostname), self.blacklist)
        for resolver in self.resolvers:
            try:
                addresses, ttl = lookup_with_ttl(resolver, walk.name)
            except (ValueError, TypeError):
                raise
            except Exception as exc:  # noqa: BLE001 - a broken resolver must not end the chain
                walk.failed(resolver, exc)
                continue
            usable = walk.answered(resolver, addresses, ttl)
            if usable:
                return usable, ttl
        return walk.end()

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` on the running loop: each resolver's ``alookup`` is awaited in turn (a resolver
        without one is called as :func:`~fastnet.dns.alookup` does)."""
        return (await self.alookup_with_ttl(hostname))[0]

    async def alookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """:meth:`lookup_with_ttl` on the running loop: same order, filtering and errors."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        walk = _Walk(normalize_hostname(hostname), self.blacklist)
        for resolver in self.resolvers:
            try:
                addresses, ttl = await alookup_with_ttl(resolver, walk.name)
            except (ValueError, TypeError):
                raise
            except Exception as exc:  # noqa: BLE001 - a broken resolver must not end the chain
                walk.failed(resolver, exc)
                continue
            usable = walk.answered(resolver, addresses, ttl)
            if usable:
                return usable, ttl
        return walk.end()

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


class _Walk:
    """One walk down the chain: what was collected and why each resolver did not win."""

    __slots__ = ("name", "blacklist", "collected", "seen", "failures", "ttls")

    def __init__(self, name: str, blacklist: IpBlacklist | None) -> None:
        self.name = name
        self.blacklist = blacklist
        self.collected: list[str] = []
        self.seen: set[str] = set()
        self.failures: list[str] = []
        self.ttls: list[float] = []

    def failed(self, resolver: Dns, exc: Exception) -> None:
        # the message, not str(): an UnknownHostError adds "(dns)", inside this sentence too
        self.failures.append(f"{resolver!r}: {exc.message if isinstance(exc, UnknownHostError) else exc}")

    def answered(self, resolver: Dns, addresses: list[str], ttl: float | None) -> list[str] | None:
        """The usable addresses of this answer (collected either way), or ``None`` to go on."""
        for ip in addresses:
            if ip not in self.seen:
                self.seen.add(ip)
                self.collected.append(ip)
        if ttl is not None:
            self.ttls.append(ttl)
        blacklist = self.blacklist
        usable = blacklist.filter(self.name, addresses) if blacklist is not None else addresses
        if usable:
            return list(usable)
        self.failures.append(
            f"{resolver!r}: " + ("all addresses blacklisted" if addresses else "no addresses")
        )
        return None

    def end(self) -> tuple[list[str], float | None]:
        """No resolver won: clear the host's blacklist and return everything collected, or fail."""
        if self.blacklist is not None:
            self.blacklist.clear(self.name)
        if self.collected:
            return self.collected, (min(self.ttls) if self.ttls else None)
        raise UnknownHostError(f"Unable to resolve {self.name}: " + "; ".join(self.failures), phase="dns")
