"""The ``Dns`` protocol, host-name validation, and the glue shared by every resolver.

A ``Dns`` is anything with ``lookup(hostname) -> list[str]``: IP literals (IPv6 without brackets) in the
order connects should be tried, or :class:`~fastnet.exceptions.UnknownHostError` when nothing is found.
Resolvers that know record TTLs also offer ``lookup_with_ttl(hostname) -> (addresses, ttl_or_None)`` so a
cache in front of them can honour the TTL; :func:`lookup_with_ttl` calls whichever a resolver has.

The asyncio side mirrors this: a resolver may offer ``async def alookup(hostname)`` (and
``alookup_with_ttl``) with the same results, ordering and errors as its blocking methods; :func:`alookup`
and :func:`alookup_with_ttl` call whichever a resolver has, and fall back to the blocking method (run
inline, so it blocks the loop while it runs) when it has none. Every resolver of this package has them.

Two optional hooks report what happened when the route layer connected to an address a ``Dns`` gave:
``connect_failed(host, ip, error)`` and ``connected(host, ip)``. Callers find them with ``getattr`` so a
plain resolver needs neither.
"""

from __future__ import annotations

import inspect
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, TypeAlias, runtime_checkable

from fastnet.exceptions import UnknownHostError

__all__ = [
    "AsyncDnsLike",
    "AsyncTtlDnsLike",
    "Dns",
    "DnsFunction",
    "DnsLike",
    "FunctionDns",
    "alookup",
    "alookup_with_ttl",
    "as_dns",
    "forward_connect_failed",
    "forward_connected",
    "is_ip_literal",
    "lookup_with_ttl",
    "normalize_hostname",
]


@runtime_checkable
class Dns(Protocol):
    """Resolves a host name to IP literals, best first.

    >>> class Fixed:
    ...     def lookup(self, hostname: str) -> list[str]:
    ...         return ["127.0.0.1"]
    >>> isinstance(Fixed(), Dns)
    True

    Implementations must be thread-safe and raise ``fastnet.UnknownHostError`` when they find nothing.
    """

    def lookup(self, hostname: str) -> list[str]: ...


#: A function accepted where a :class:`Dns` is: ``f(hostname)`` returning the addresses (IP strings, or
#: objects whose ``str`` is one), or an awaitable of them (``async def`` functions serve ``alookup``).
DnsFunction: TypeAlias = "Callable[[str], Iterable[object] | Awaitable[Iterable[object]]]"
#: What a ``dns=`` option takes: a :class:`Dns`, or a function (:func:`as_dns` wraps it).
DnsLike: TypeAlias = "Dns | DnsFunction"


class _AsyncLookup(Protocol):
    """A resolver with ``async def alookup(hostname)`` (a ``lookup`` is not needed on the asyncio side)."""

    def alookup(self, hostname: str) -> Awaitable[Iterable[object]]: ...


class _AwaitableLookup(Protocol):
    """A resolver whose ``lookup`` returns the addresses or an awaitable of them (``async def lookup``)."""

    def lookup(self, hostname: str) -> Iterable[object] | Awaitable[Iterable[object]]: ...


class _AsyncLookupWithTtl(Protocol):
    def alookup_with_ttl(self, hostname: str) -> Awaitable[tuple[Iterable[object], float | None]]: ...


class _LookupWithTtl(Protocol):
    def lookup_with_ttl(
        self, hostname: str
    ) -> tuple[Iterable[object], float | None] | Awaitable[tuple[Iterable[object], float | None]]: ...


#: What :func:`alookup` takes: a :class:`Dns` or a function, or a resolver with ``alookup``, or one whose
#: ``lookup`` returns an awaitable.
AsyncDnsLike: TypeAlias = "DnsLike | _AsyncLookup | _AwaitableLookup"
#: What :func:`alookup_with_ttl` takes: what :func:`alookup` does, or a resolver with only
#: ``alookup_with_ttl`` or ``lookup_with_ttl`` (blocking or awaitable).
AsyncTtlDnsLike: TypeAlias = "AsyncDnsLike | _AsyncLookupWithTtl | _LookupWithTtl"


def is_ip_literal(host: str) -> bool:
    """True for an IPv4 dotted quad or an IPv6 literal (brackets and a ``%zone`` allowed)."""
    if not host:
        return False
    if host[0] == "[" and host[-1] == "]":
        host = host[1:-1]
    if ":" in host:
        try:
            socket.inet_pton(socket.AF_INET6, host.split("%", 1)[0])
        except (OSError, ValueError):
            return False
        return True
    if not host[-1].isdigit():
        return False
    try:
        socket.inet_pton(socket.AF_INET, host)
    except (OSError, ValueError):
        return False
    return True


def _strip_brackets(host: str) -> str:
    if host[:1] == "[" and host[-1:] == "]":
        return host[1:-1]
    return host


# RFC 1035 §2.3.1 (relaxed by RFC 1123 §2.1 and by practice):
#   <domain> ::= <label> | <label> "." <domain>
#   <label>  ::= <let-dig> [ [ <ldh-str> ] <let-dig> ]      1 to 63 octets; the whole name at most 253
# Deviation: "_" is accepted anywhere in a label (SRV-style names and real hosts use it) and a label may
# start or end with "-"; everything else outside [a-z0-9-] is rejected after IDNA encoding.
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def normalize_hostname(host: str) -> str:
    """Validate a host name and return its wire form: lowercase, IDNA-encoded, no trailing dot.

    IP literals come back as they are (brackets removed) and are never resolved.

    >>> normalize_hostname("Bücher.Example.")
    'xn--bcher-kva.example'
    >>> normalize_hostname("a..b")
    Traceback (most recent call last):
    ...
    ValueError: Invalid host name 'a..b': empty label
    """
    if not isinstance(host, str):
        raise TypeError(f"host name must be a str, not {type(host).__name__}")
    if is_ip_literal(host):
        return _strip_brackets(host)
    name = host[:-1] if host.endswith(".") and host != "." else host
    if not name or name == ".":
        raise ValueError(f"Invalid host name {host!r}: empty")
    if not name.isascii():
        for ch in name:
            if ch < " " or ch in "\x7f/\\@:%#?[] ":
                raise ValueError(f"Invalid host name {host[:80]!r}: character {ch!r} is not allowed")
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError as exc:
            # the codec raises for empty labels and over-long labels as well; say which when we can
            if ".." in name or name.startswith("."):
                raise ValueError(f"Invalid host name {host[:80]!r}: empty label") from None
            raise ValueError(f"Invalid host name {host[:80]!r}: cannot be IDNA-encoded ({exc})") from None
    name = name.lower()
    if len(name) > 253:
        raise ValueError(f"Invalid host name {host[:80]!r}...: longer than 253 characters")
    for label in name.split("."):
        if not label:
            raise ValueError(f"Invalid host name {host[:80]!r}: empty label")
        if len(label) > 63:
            raise ValueError(f"Invalid host name {host[:80]!r}: label longer than 63 characters")
        for ch in label:
            if ch not in _LABEL_CHARS:
                raise ValueError(f"Invalid host name {host[:80]!r}: character {ch!r} is not allowed")
    return name


class FunctionDns:
    """Adapts a plain function ``f(hostname) -> list[str]`` to the :class:`Dns` protocol.

    >>> dns = FunctionDns(lambda host: ["127.0.0.1"])
    >>> dns.lookup("example.test"), dns.lookup("::1")
    (['127.0.0.1'], ['::1'])

    IP literals are answered without calling the function; an empty answer raises ``UnknownHostError``.
    A coroutine function (``async def f(hostname)``) is accepted too: :meth:`alookup` awaits it, and
    :meth:`lookup` refuses it with a ``TypeError`` (it cannot wait without a loop).
    """

    __slots__ = ("function",)

    def __init__(self, function: DnsFunction) -> None:
        self.function = function

    def lookup(self, hostname: str) -> list[str]:
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)]
        if inspect.iscoroutinefunction(self.function):
            raise TypeError(
                f"{self!r} wraps a coroutine function, which a blocking lookup cannot await: "
                "use alookup() (fastnet.AsyncClient does), or give a plain function"
            )
        result = self.function(hostname)
        if inspect.isawaitable(result):  # a plain function that returned one (a lambda, a partial...)
            close = getattr(result, "close", None)
            if close is not None:
                close()  # a coroutine never awaited would warn when collected
            raise TypeError(f"{self!r} returned an awaitable: use alookup() (or an AsyncClient) with it")
        return self._addresses(hostname, result)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` on the running loop: the function's result is awaited when it is awaitable (a
        blocking function runs inline and blocks the loop)."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)]
        result = self.function(hostname)
        if inspect.isawaitable(result):
            result = await result
        return self._addresses(hostname, result)

    def _addresses(self, hostname: str, result: Iterable[object] | None) -> list[str]:
        if isinstance(result, str) or result is None:
            raise TypeError(f"{self!r} must return a list of IP address strings, not {result!r}")
        addresses = [str(a) for a in result]
        if not addresses:
            raise UnknownHostError(f"{self!r} returned no addresses for {hostname}", phase="dns")
        return addresses

    def __repr__(self) -> str:
        return f"FunctionDns({getattr(self.function, '__qualname__', self.function)!s})"


def as_dns(obj: DnsLike) -> Dns:
    """Return ``obj`` if it already has ``lookup``, or wrap a plain callable in :class:`FunctionDns`.

    >>> as_dns(lambda host: ["127.0.0.1"]).lookup("app.test")
    ['127.0.0.1']
    """
    if callable(getattr(obj, "lookup", None)):
        return obj  # type: ignore[return-value]  # it has lookup(): a Dns
    if callable(obj):
        return FunctionDns(obj)
    raise TypeError(f"dns must have a lookup(hostname) method or be a callable, not {type(obj).__name__}")


def lookup_with_ttl(resolver: DnsLike, hostname: str) -> tuple[list[str], float | None]:
    """Ask ``resolver`` for addresses and, when it knows one, the TTL in seconds (else ``None``)."""
    method = getattr(resolver, "lookup_with_ttl", None)
    if method is not None:
        addresses, ttl = method(hostname)
        return list(addresses), ttl
    lookup = getattr(resolver, "lookup", None)
    if callable(lookup):
        return list(lookup(hostname)), None
    return FunctionDns(resolver).lookup(hostname), None  # type: ignore[arg-type]  # no lookup(): a function


async def alookup(resolver: AsyncDnsLike, hostname: str) -> Iterable[object]:
    """Resolve ``hostname`` on the running event loop (what ``AsyncClient`` does): ``resolver.alookup``
    when it has one; else its ``lookup`` (or the resolver itself, a callable, through
    :class:`FunctionDns`), whose result is awaited when it is awaitable. A blocking ``lookup`` runs inline
    and blocks the loop while it runs."""
    method = getattr(resolver, "alookup", None)
    answer: Iterable[object]
    if method is not None:
        answer = await method(hostname)
        return answer
    lookup = getattr(resolver, "lookup", None)
    if lookup is None:
        return await FunctionDns(resolver).alookup(hostname)  # type: ignore[arg-type]  # a function
    answer = lookup(hostname)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


async def alookup_with_ttl(resolver: AsyncTtlDnsLike, hostname: str) -> tuple[list[str], float | None]:
    """:func:`lookup_with_ttl` on the running loop: ``resolver.alookup_with_ttl``, else its ``alookup``
    (TTL unknown), else the blocking ``lookup_with_ttl`` or ``lookup`` run inline (their result awaited
    when it is awaitable), else the resolver itself as a function (:class:`FunctionDns`)."""
    method = getattr(resolver, "alookup_with_ttl", None)
    if method is not None:
        addresses, ttl = await method(hostname)
        return list(addresses), ttl
    method = getattr(resolver, "alookup", None)
    if method is not None:
        return list(await method(hostname)), None
    method = getattr(resolver, "lookup_with_ttl", None)
    if method is not None:
        answer = method(hostname)
        if inspect.isawaitable(answer):
            answer = await answer
        addresses, ttl = answer
        return list(addresses), ttl
    method = getattr(resolver, "lookup", None)
    if callable(method):
        answer = method(hostname)
        if inspect.isawaitable(answer):
            answer = await answer
        return list(answer), None
    return await FunctionDns(resolver).alookup(hostname), None  # type: ignore[arg-type]  # a function


def forward_connect_failed(target: object, host: str, ip: str, error: BaseException) -> None:
    """Call ``target.connect_failed`` if it has one."""
    hook = getattr(target, "connect_failed", None)
    if hook is not None:
        hook(host, ip, error)


def forward_connected(target: object, host: str, ip: str) -> None:
    """Call ``target.connected`` if it has one."""
    hook = getattr(target, "connected", None)
    if hook is not None:
        hook(host, ip)
