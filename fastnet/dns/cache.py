"""DNS answer cache, per-host IP blacklist and the caching resolver: the compiled hot path of ``fastnet.dns``.

Theory of operation
-------------------
``DnsCache`` maps a host name to an entry: the addresses (a tuple), the monotonic time the entry stops
being fresh, the time it may no longer be served even as a last resort (stale-if-error), and for
negative entries the reason the name did not resolve and a copy of its cause without the traceback (a
cached failure reads like the first, and keeps no frames of the failed call alive). Entries live in an
``OrderedDict`` kept in LRU order; the least recently used entry is evicted when ``max_entries`` would be
exceeded.

Reads take no lock: a hit is one dict lookup, one ``move_to_end`` and a tuple-to-list copy, each atomic
under the GIL; a concurrent eviction of the same key only costs the hit its LRU bump. Writes and
evictions happen under one lock. Expired entries are kept (for stale-if-error) until their stale window
passes or the LRU pushes them out.

``CachingDns`` puts a cache in front of another resolver. A miss is resolved once however many threads
ask for the same name at the same time (single-flight: the first thread resolves, the others wait for
its result); ``alookup`` does the same on an asyncio loop, sharing the cache and the flights with
``lookup`` (see "Flights" below). TTLs reported by the resolver are honoured (clamped to
``[min_ttl, max_ttl]``), ``ttl`` is used when the resolver does not know one. A failed resolution is
cached for ``negative_ttl`` seconds, unless an expired answer is still within its stale window: then
that answer is served instead (``stale_if_error``), and the negative result is not stored.

``IpBlacklist`` counts consecutive failed connects per (host, ip). More than ``threshold`` of them and
the ip is blacklisted for that host; a successful connect resets the count. It is fed through the
``connect_failed``/``connected`` hooks that the route layer calls on a ``Dns``.

Flights
-------
A miss in progress is a ``_Flight`` in ``CachingDns._flights`` (keyed by the host name as asked). A
blocking flight is resolved by its thread; an asyncio flight by a task of its own on the loop of the
coroutine that started it, so cancelling the coroutine that started it does not stop the resolution
others wait for. Who asks while a flight is in progress waits for it without a second upstream query:

* a thread blocks on the flight's ``threading.Event``;
* a coroutine awaits a future of its own, which the flight's end sets (through
  ``call_soon_threadsafe`` when the flight ran on another thread or loop).

Nothing ever blocks a thread that runs the flight it would wait for: a blocking ``lookup`` called on
the loop thread of an asyncio flight for the same name (or from inside a flight, re-entrantly) resolves
on its own instead. A waiting coroutine that is cancelled leaves the flight; when the last waiter (thread
or coroutine) has left, the flight's task is cancelled and the coroutine that was cancelled last waits
until it has finished (its sockets are closed when the cancelled lookup returns). A flight that ends
without an outcome (its task cancelled: by the last waiter, or by a loop shutting down) is "abandoned":
whoever still waits starts over, and leads the next flight or joins it. Threads and coroutines waiting
for a flight on another loop check every ``_LIVENESS_CHECK`` seconds that the loop still runs (a loop
stopped or closed with the task pending would otherwise strand them) and start over if it does not.

This file is pure Python; ``cache.pxd`` declares the same classes as ``cdef`` classes and the build
compiles this source in place.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from fastnet.dns._base import (
    alookup_with_ttl,
    forward_connect_failed,
    forward_connected,
    is_ip_literal,
    lookup_with_ttl,
    normalize_hostname,
)
from fastnet.exceptions import UnknownHostError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fastnet.dns._base import DnsLike

__all__ = ["CachingDns", "DnsCache", "IpBlacklist"]

_monotonic = time.monotonic
_get_ident = threading.get_ident

#: Seconds between the checks that a flight's event loop still runs, made by threads and coroutines that
#: wait for a flight on another loop.
_LIVENESS_CHECK = 0.5
#: Abandoned flights a lookup starts over after, before it resolves on its own.
_MAX_ROUNDS = 8


class _Entry:
    """One cached answer: addresses (empty for a negative entry), freshness and stale deadline; for a
    negative entry the reason and the cause of the failure."""

    __slots__ = ("addresses", "expires", "stale_until", "error", "cause")

    def __init__(
        self,
        addresses: tuple[str, ...],
        expires: float,
        stale_until: float,
        error: str | None,
        cause: BaseException | None = None,
    ) -> None:
        self.addresses = addresses
        self.expires = expires
        self.stale_until = stale_until
        self.error = error
        self.cause = cause


class DnsCache:
    """A bounded TTL + LRU cache of DNS answers, with negative entries and stale answers for errors.

    >>> cache = DnsCache(max_entries=100, default_ttl=10.0)
    >>> cache.put("app.test", ["127.0.0.1", "127.0.0.2"], ttl=5)
    >>> cache.get("app.test")
    ['127.0.0.1', '127.0.0.2']
    >>> cache.get("other.test") is None
    True

    ``stale_ttl`` is how long after expiry an answer may still be handed out by :meth:`get_stale`.
    """

    __slots__ = ("max_entries", "default_ttl", "negative_ttl", "stale_ttl", "_entries", "_lock")

    def __init__(
        self,
        max_entries: int = 1024,
        default_ttl: float = 10.0,
        negative_ttl: float = 1.0,
        stale_ttl: float = 300.0,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries!r}")
        if default_ttl < 0 or negative_ttl < 0 or stale_ttl < 0:
            raise ValueError("default_ttl, negative_ttl and stale_ttl must not be negative")
        self.max_entries = max_entries
        self.default_ttl = float(default_ttl)
        self.negative_ttl = float(negative_ttl)
        self.stale_ttl = float(stale_ttl)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, host: str) -> _Entry | None:
        """The entry for ``host`` whatever its age, bumped in LRU order."""
        entry = self._entries.get(host)
        if entry is not None:
            try:
                self._entries.move_to_end(host)
            except KeyError:  # evicted by another thread in between; the entry we hold is still valid
                pass
        return entry

    def get(self, host: str) -> list[str] | None:
        """Fresh addresses for ``host``, or ``None`` (absent, expired or negative)."""
        entry = self._entry(host)
        if entry is None or entry.error is not None or entry.expires <= _monotonic():
            return None
        return list(entry.addresses)

    def get_error(self, host: str) -> str | None:
        """The reason of a fresh negative entry for ``host``, or ``None``."""
        entry = self._entries.get(host)
        if entry is None or entry.error is None or entry.expires <= _monotonic():
            return None
        return str(entry.error)

    def get_stale(self, host: str) -> list[str] | None:
        """Addresses for ``host`` even if expired, as long as they are within the stale window."""
        entry = self._entries.get(host)
        if entry is None or entry.error is not None or entry.stale_until <= _monotonic():
            return None
        return list(entry.addresses)

    def put(self, host: str, addresses: Iterable[str], ttl: float | None = None) -> None:
        """Store a positive answer for ``ttl`` seconds (``default_ttl`` when ``None``)."""
        items = tuple(addresses)
        if not items:
            raise ValueError("put() needs at least one address; use put_negative() for failures")
        seconds = self.default_ttl if ttl is None else float(ttl)
        if seconds < 0:
            seconds = 0.0
        now = _monotonic()
        self._store(host, _Entry(items, now + seconds, now + seconds + self.stale_ttl, None))

    def put_negative(
        self, host: str, reason: str, ttl: float | None = None, cause: BaseException | None = None
    ) -> None:
        """Remember for ``ttl`` seconds (``negative_ttl`` when ``None``) that ``host`` did not resolve.

        ``cause``, when given, becomes the ``__cause__`` of the error a hit raises (store a copy without
        a traceback). A positive entry still inside its stale window is kept rather than overwritten.
        """
        seconds = self.negative_ttl if ttl is None else float(ttl)
        if seconds <= 0:
            return
        now = _monotonic()
        with self._lock:
            old = self._entries.get(host)
            if old is not None and old.error is None and old.stale_until > now:
                return
        self._store(host, _Entry((), now + seconds, now + seconds, reason, cause))

    def _store(self, host: str, entry: _Entry) -> None:
        with self._lock:
            entries = self._entries
            entries[host] = entry
            entries.move_to_end(host)
            while len(entries) > self.max_entries:
                entries.popitem(last=False)

    def invalidate(self, host: str) -> None:
        """Forget everything about ``host``."""
        with self._lock:
            self._entries.pop(host, None)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def expire(self, host: str) -> None:
        """Mark ``host``'s entry expired now, keeping it for stale-if-error (handy in tests)."""
        with self._lock:
            entry = self._entries.get(host)
            if entry is not None:
                now = _monotonic()
                entry.stale_until = entry.stale_until - entry.expires + now
                entry.expires = now

    def hosts(self) -> list[str]:
        """Cached host names, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, host: object) -> bool:
        return host in self._entries

    def __repr__(self) -> str:
        return f"DnsCache({len(self._entries)}/{self.max_entries} entries, default_ttl={self.default_ttl})"


class IpBlacklist:
    """Counts consecutive failed connects per (host, ip); more than ``threshold`` blacklists the ip.

    >>> bl = IpBlacklist(threshold=2)
    >>> [bl.record_failure("app.test", "127.0.0.4") for _ in range(3)]
    [False, False, True]
    >>> bl.filter("app.test", ["127.0.0.4", "127.0.0.1"])
    ['127.0.0.1']
    >>> bl.record_success("app.test", "127.0.0.4"); bl.is_blacklisted("app.test", "127.0.0.4")
    False

    It can be handed to ``ChainDns``/``CachingDns`` or used directly as the connect hooks.
    """

    __slots__ = ("threshold", "max_hosts", "_failures", "_lock")

    def __init__(self, threshold: int = 5, max_hosts: int = 10000) -> None:
        if threshold < 0:
            raise ValueError(f"threshold must not be negative, not {threshold!r}")
        if max_hosts < 1:
            raise ValueError(f"max_hosts must be at least 1, not {max_hosts!r}")
        self.threshold = threshold
        self.max_hosts = max_hosts
        self._failures: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def record_failure(self, host: str, ip: str) -> bool:
        """Count one failed connect; True if this failure is the one that blacklists ``ip``."""
        with self._lock:
            per_host = self._failures.get(host)
            if per_host is None:
                if len(self._failures) >= self.max_hosts:
                    # oldest host first (dicts keep insertion order); bounded memory beats perfect recall
                    del self._failures[next(iter(self._failures))]
                per_host = {}
                self._failures[host] = per_host
            count = per_host.get(ip, 0) + 1
            per_host[ip] = count
            return count == self.threshold + 1

    def record_success(self, host: str, ip: str) -> None:
        """A connect to ``ip`` worked: its failure count starts again from zero."""
        per_host = self._failures.get(host)
        if per_host is None:
            return
        with self._lock:
            per_host.pop(ip, None)
            if not per_host and self._failures.get(host) is per_host:
                del self._failures[host]

    def failures(self, host: str, ip: str) -> int:
        """Consecutive failures counted for (host, ip)."""
        per_host = self._failures.get(host)
        if per_host is None:
            return 0
        return per_host.get(ip, 0)

    def is_blacklisted(self, host: str, ip: str) -> bool:
        """True if more than ``threshold`` consecutive connects to ``ip`` for ``host`` failed."""
        per_host = self._failures.get(host)
        if per_host is None:
            return False
        return per_host.get(ip, 0) > self.threshold

    def filter(self, host: str, ips: list[str]) -> list[str]:
        """``ips`` without the blacklisted ones, order kept (``ips`` itself when nothing is blacklisted)."""
        per_host = self._failures.get(host)
        if per_host is None:
            return ips
        threshold = self.threshold
        kept = [ip for ip in ips if per_host.get(ip, 0) <= threshold]
        if len(kept) == len(ips):
            return ips
        return kept

    def blacklisted(self, host: str) -> list[str]:
        """The ips currently blacklisted for ``host``."""
        with self._lock:
            per_host = self._failures.get(host)
            if per_host is None:
                return []
            return [ip for ip, count in per_host.items() if count > self.threshold]

    def clear(self, host: str | None = None) -> None:
        """Forget the counts for ``host``, or for every host when ``host`` is ``None``."""
        with self._lock:
            if host is None:
                self._failures.clear()
            else:
                self._failures.pop(host, None)

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        """Route-layer hook: a connect to ``ip`` for ``host`` failed with ``error``."""
        self.record_failure(host, ip)

    def connected(self, host: str, ip: str) -> None:
        """Route-layer hook: a connect to ``ip`` for ``host`` succeeded."""
        self.record_success(host, ip)

    def __len__(self) -> int:
        return len(self._failures)

    def __repr__(self) -> str:
        return f"IpBlacklist(threshold={self.threshold}, hosts={len(self._failures)})"


class _Flight:
    """A resolution in progress that other threads and coroutines asking for the same host wait for.

    ``loop`` is ``None`` for a blocking flight (resolved by thread ``owner``); for an asyncio flight it is
    the loop that runs ``task`` (``owner`` is that loop's thread). Threads wait on ``done`` (``blocked``
    counts them); coroutines on a future of theirs, listed in ``waiters`` as ``(loop, future)``, a list
    that becomes ``None`` when the flight lands. ``abandoned``: it ended without an outcome.
    """

    __slots__ = ("done", "addresses", "error", "abandoned", "owner", "loop", "task", "waiters", "blocked")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.done = threading.Event()
        self.addresses: list[str] | None = None
        self.error: BaseException | None = None
        self.abandoned = False
        self.owner = _get_ident()
        self.loop = loop
        self.task: asyncio.Task[list[str]] | None = None
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] | None = []
        self.blocked = 0


class CachingDns:
    """A resolver with a TTL cache, single-flight misses, negative caching and stale-if-error.

    >>> calls = []
    >>> def upstream(host):
    ...     calls.append(host)
    ...     return ["127.0.0.1"]
    >>> dns = CachingDns(upstream, ttl=10.0)
    >>> dns.lookup("app.test"), dns.lookup("app.test"), len(calls)
    (['127.0.0.1'], ['127.0.0.1'], 1)

    ``ttl`` is used when the inner resolver reports no TTL; reported TTLs are clamped to
    ``[min_ttl, max_ttl]``. ``stale_if_error`` is how many seconds past expiry an answer may still be
    served when the inner resolver fails (0 turns it off). ``blacklist``, when given, filters fresh
    resolutions and is fed by the connect hooks, which are also forwarded to ``inner``.
    """

    __slots__ = ("inner", "cache", "blacklist", "min_ttl", "max_ttl", "_flights", "_lock")

    def __init__(
        self,
        inner: DnsLike,
        ttl: float = 10.0,
        max_entries: int = 1024,
        stale_if_error: float = 300.0,
        negative_ttl: float = 1.0,
        min_ttl: float = 0.0,
        max_ttl: float = 3600.0,
        blacklist: IpBlacklist | None = None,
    ) -> None:
        if inner is None or not (callable(inner) or callable(getattr(inner, "lookup", None))):
            raise TypeError(f"inner must be a Dns or a callable, not {inner!r}")
        if min_ttl < 0 or max_ttl < min_ttl:
            raise ValueError(f"need 0 <= min_ttl <= max_ttl, got {min_ttl!r} and {max_ttl!r}")
        self.inner = inner
        self.cache = DnsCache(max_entries, ttl, negative_ttl, stale_if_error)
        self.blacklist = blacklist
        self.min_ttl = float(min_ttl)
        self.max_ttl = float(max_ttl)
        self._flights: dict[str, _Flight] = {}
        self._lock = threading.Lock()

    def lookup(self, hostname: str) -> list[str]:
        """Cached addresses for ``hostname``; resolves through ``inner`` on a miss."""
        entry = self.cache._entry(hostname)
        if entry is not None and entry.expires > _monotonic():
            if entry.error is None:
                return list(entry.addresses)
            error = UnknownHostError(str(entry.error), phase="dns")
            if entry.cause is not None:
                error.__cause__ = entry.cause
            raise error
        return self._miss(hostname)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` on the running loop: the same cache and flights (a blocking and an asyncio lookup
        of one name share the entry and the upstream query); a miss awaits ``inner``'s ``alookup``."""
        entry = self.cache._entry(hostname)
        if entry is not None and entry.expires > _monotonic():
            if entry.error is None:
                return list(entry.addresses)
            error = UnknownHostError(str(entry.error), phase="dns")
            if entry.cause is not None:
                error.__cause__ = entry.cause
            raise error
        return await self._amiss(hostname)

    def _miss(self, hostname: str) -> list[str]:
        if is_ip_literal(hostname):
            return [normalize_hostname(hostname)]
        # entries are keyed by the name as the caller spells it, so the caller's next hit is one lookup
        name = normalize_hostname(hostname)
        for _ in range(_MAX_ROUNDS):
            alone = False
            with self._lock:
                flight: _Flight | None = self._flights.get(hostname)
                leader = flight is None
                if flight is None:
                    flight = _Flight()
                    self._flights[hostname] = flight
                elif flight.owner == _get_ident():
                    alone = True  # this thread runs that flight: waiting for it would never end
                else:
                    flight.blocked += 1
            if alone:
                return self._resolve(hostname, name)
            if leader:
                return self._lead(hostname, name, flight)
            if self._block(hostname, flight):
                if flight.error is not None:
                    raise _copy_error(flight.error)
                return list(flight.addresses)  # type: ignore[arg-type]  # landed without an error: set
            entry = self.cache._entry(hostname)  # abandoned: maybe someone else resolved it meanwhile
            if entry is not None and entry.expires > _monotonic() and entry.error is None:
                return list(entry.addresses)
        return self._resolve(hostname, name)

    def _lead(self, hostname: str, name: str, flight: _Flight) -> list[str]:
        """Resolve as the thread of a blocking flight."""
        try:
            addresses = self._resolve(hostname, name)
            flight.addresses = addresses
            return list(addresses)
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            self._land(hostname, flight)

    def _block(self, hostname: str, flight: _Flight) -> bool:
        """Wait (blocking) for another thread's or loop's flight: True when it landed with an outcome."""
        try:
            if flight.loop is None:
                flight.done.wait()
            else:
                while not flight.done.wait(_LIVENESS_CHECK):
                    if not _runs(flight.loop):
                        self._drop(hostname, flight)
                        return False
        finally:
            with self._lock:
                flight.blocked -= 1
        return not flight.abandoned

    async def _amiss(self, hostname: str) -> list[str]:
        if is_ip_literal(hostname):
            return [normalize_hostname(hostname)]
        name = normalize_hostname(hostname)
        loop = asyncio.get_running_loop()
        for _ in range(_MAX_ROUNDS):
            future = loop.create_future()
            alone = False
            with self._lock:
                flight: _Flight | None = self._flights.get(hostname)
                leader = flight is None
                if flight is None:
                    flight = _Flight(loop)
                    self._flights[hostname] = flight
                elif flight.loop is None and flight.owner == _get_ident():
                    alone = True  # a blocking flight of this very thread (re-entered): it cannot land
                if not alone:
                    flight.waiters.append((loop, future))  # type: ignore[union-attr]  # joinable: a list
            if alone:
                return await self._aresolve(hostname, name)
            if leader:
                # its own task: cancelling this coroutine must not stop what the others wait for
                task = loop.create_task(self._aresolve(hostname, name))
                flight.task = task
                task.add_done_callback(functools.partial(self._landed, hostname, flight))
            try:
                if flight.loop is None or flight.loop is loop:
                    await future
                    landed = True
                else:
                    landed = await self._await_remote(hostname, flight, loop, future)
            except asyncio.CancelledError:
                left = self._leave(hostname, flight, loop, future)
                if left is not None and not left.done():
                    await asyncio.wait((left,))  # its sockets are closed when this lookup returns
                raise
            if landed and not flight.abandoned:
                error = flight.error
                if error is not None:
                    if leader:
                        raise error
                    raise _copy_error(error)
                return list(flight.addresses)  # type: ignore[arg-type]  # landed without an error: set
            entry = self.cache._entry(hostname)  # abandoned: maybe someone else resolved it meanwhile
            if entry is not None and entry.expires > _monotonic() and entry.error is None:
                return list(entry.addresses)
        return await self._aresolve(hostname, name)

    async def _await_remote(
        self,
        hostname: str,
        flight: _Flight,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[None],
    ) -> bool:
        """Await the end of a flight on another loop: True when it landed, False when that loop stopped
        running first (the flight is dropped: it may never land)."""
        while True:
            done, _ = await asyncio.wait((future,), timeout=_LIVENESS_CHECK)
            if done:
                return True
            if not _runs(flight.loop):  # type: ignore[arg-type]  # a flight of another loop
                self._drop(hostname, flight)
                with self._lock:
                    waiters = flight.waiters
                    if waiters is not None and (loop, future) in waiters:
                        waiters.remove((loop, future))
                return False

    def _landed(self, hostname: str, flight: _Flight, task: asyncio.Task[list[str]]) -> None:
        """The task of an asyncio flight has finished: record its outcome and wake the waiters."""
        if task.cancelled():
            flight.abandoned = True
        else:
            error = task.exception()
            if error is None:
                flight.addresses = task.result()
            else:
                flight.error = error
        self._land(hostname, flight)

    def _land(self, hostname: str, flight: _Flight) -> None:
        """End ``flight``: no longer joinable; wake the threads and the coroutines waiting for it."""
        with self._lock:
            if self._flights.get(hostname) is flight:
                del self._flights[hostname]
            waiters = flight.waiters
            flight.waiters = None
        flight.done.set()
        if waiters:
            current = _running_loop()
            for loop, future in waiters:
                if loop is current:
                    _wake(future)
                else:
                    try:
                        loop.call_soon_threadsafe(_wake, future)
                    except RuntimeError:  # that loop is closed: its coroutines are gone with it
                        pass

    def _drop(self, hostname: str, flight: _Flight) -> None:
        """Forget ``flight`` (its loop no longer runs): the next lookup starts a new one."""
        with self._lock:
            if self._flights.get(hostname) is flight:
                del self._flights[hostname]

    def _leave(
        self,
        hostname: str,
        flight: _Flight,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[None],
    ) -> asyncio.Task[list[str]] | None:
        """A waiting coroutine was cancelled: it leaves ``flight``. When nobody waits any more the
        flight's task is cancelled; returned when it runs on ``loop`` (the caller waits for it)."""
        with self._lock:
            waiters = flight.waiters
            if waiters is None:
                return None  # landed already
            if (loop, future) in waiters:
                waiters.remove((loop, future))
            task = flight.task
            if waiters or flight.blocked or task is None or task.done():
                return None
            if self._flights.get(hostname) is flight:
                del self._flights[hostname]  # newcomers start afresh rather than join a cancelled flight
        if flight.loop is loop:
            task.cancel()
            return task
        try:
            flight.loop.call_soon_threadsafe(task.cancel)  # type: ignore[union-attr]  # it has a task: a loop
        except RuntimeError:  # that loop is closed
            pass
        return None

    def _resolve(self, hostname: str, name: str) -> list[str]:
        try:
            addresses, ttl = lookup_with_ttl(self.inner, name)
        except (ValueError, TypeError):
            raise
        except Exception as exc:
            stale = self._fallback(hostname, exc)
            if stale is not None:
                return stale
            raise
        return self._accept(hostname, name, addresses, ttl)

    async def _aresolve(self, hostname: str, name: str) -> list[str]:
        """:meth:`_resolve` through ``inner``'s ``alookup_with_ttl`` (or what stands for it)."""
        try:
            addresses, ttl = await alookup_with_ttl(self.inner, name)
        except (ValueError, TypeError):
            raise
        except Exception as exc:
            stale = self._fallback(hostname, exc)
            if stale is not None:
                return stale
            raise
        return self._accept(hostname, name, addresses, ttl)

    def _fallback(self, hostname: str, exc: Exception) -> list[str] | None:
        """``inner`` failed: a stale answer to serve instead, or ``None`` (the failure is cached when it
        is an ``UnknownHostError``) and the caller raises."""
        cache = self.cache
        stale = cache.get_stale(hostname)
        if stale is not None:
            return stale
        if isinstance(exc, UnknownHostError):
            # the message, not str(exc): that adds "(dns)", and the cached error adds it again
            cache.put_negative(hostname, exc.message, None, _detached(exc.__cause__))
        return None

    def _accept(self, hostname: str, name: str, addresses: list[str], ttl: float | None) -> list[str]:
        """``inner`` answered: filter, cache and return the answer (an empty one fails like an error)."""
        cache = self.cache
        if not addresses:
            stale = cache.get_stale(hostname)
            if stale is not None:
                return stale
            message = f"{self.inner!r} returned no addresses for {name}"
            cache.put_negative(hostname, message)
            raise UnknownHostError(message, phase="dns")
        blacklist = self.blacklist
        if blacklist is not None:
            usable = blacklist.filter(name, addresses)
            if not usable:
                # every answer is blacklisted: start counting again rather than fail
                blacklist.clear(name)
            else:
                addresses = usable
        if ttl is None:
            seconds = cache.default_ttl
        else:
            seconds = min(max(float(ttl), self.min_ttl), self.max_ttl)
        cache.put(hostname, addresses, seconds)
        return addresses

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        """Route-layer hook: forwarded to ``inner`` and the blacklist; drops the cached answer once
        ``ip`` gets blacklisted so the next lookup resolves without it."""
        forward_connect_failed(self.inner, host, ip, error)
        inner_blacklist = getattr(self.inner, "blacklist", None)
        if self.blacklist is not None and self.blacklist is not inner_blacklist:
            self.blacklist.record_failure(host, ip)
        for blacklist in (self.blacklist, inner_blacklist):
            if blacklist is not None and blacklist.is_blacklisted(host, ip):
                self.cache.invalidate(host)
                return

    def connected(self, host: str, ip: str) -> None:
        """Route-layer hook: forwarded to ``inner`` and the blacklist."""
        forward_connected(self.inner, host, ip)
        if self.blacklist is not None and self.blacklist is not getattr(self.inner, "blacklist", None):
            self.blacklist.record_success(host, ip)

    def invalidate(self, hostname: str | None = None) -> None:
        """Forget ``hostname`` (or everything when ``None``)."""
        if hostname is None:
            self.cache.clear()
        else:
            self.cache.invalidate(hostname)

    def __repr__(self) -> str:
        return f"CachingDns({self.inner!r}, {self.cache!r})"


def _runs(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is running (so a flight of it can still land)."""
    return bool(loop.is_running()) and not loop.is_closed()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _detached(error: BaseException | None) -> BaseException | None:
    """A copy of ``error`` without traceback, cause or context (``None`` if it cannot be copied)."""
    if error is None:
        return None
    try:
        return copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception whose constructor wants other arguments
        return None


def _copy_error(error: BaseException) -> BaseException:
    """A fresh exception for a waiting thread or coroutine, so one traceback is not shared."""
    if isinstance(error, UnknownHostError):
        copy = UnknownHostError(error.message, phase=error.phase)
    elif isinstance(error, Exception):
        copy = UnknownHostError(str(error), phase="dns")
    else:
        return error
    copy.__cause__ = error
    return copy
