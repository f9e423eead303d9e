"""Idle keep-alive connections keyed by Address, most recently used first.

Theory of operation: ``idle`` maps an Address to a stack of idle connections (the most recently used
on top, so a warm connection stays warm and extras age out; OkHttp hands out the oldest instead);
``order`` holds every idle connection in the order it became idle, so the oldest is found in O(1) for
eviction. ``counts`` counts live connections (idle and in use) per host for
``max_connections_per_host``; a freed slot (or a connection gone idle) is announced to ``slot_freed``,
which wakes the threads waiting for one (``AsyncConnectionPool`` overrides it to wake one asyncio
waiter). All bookkeeping happens under one lock; the methods collect the connections to close and close
them after releasing the lock, so no socket I/O ever happens while the lock is held. Expired and excess
idle connections are evicted whenever the pool is touched (no background thread polls sockets), and only
the one connection about to be reused is health-checked, by the caller.

``live`` holds every connection the pool counts, idle or in use, so ``close_all()`` can close them all
(``client.close()``). A response that is garbage-collected unread hands its connection to
``discard_later()`` from a finalizer: a finalizer may run while this very thread holds the lock, so that
is a lock-free append to ``abandoned``, and the pool forgets those connections (freeing their per-host
slots) the next time it is used, or at once when threads wait for a slot and the lock is free (a
finalizer never waits for the lock); ``AsyncConnectionPool`` hands the forgetting to its event loop.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from fastnet.exceptions import PoolTimeout

if TYPE_CHECKING:
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet.route import Address

__all__ = ["SLOT_IDLE", "SLOT_ROOM", "SLOT_WAIT", "RealConnectionPool", "pool_timeout"]

#: What ``slot_state`` says about an address under a per-host limit: an idle connection to it is there
#: (acquire it), the host has room for a new connection, or every slot is in use (wait).
SLOT_IDLE = 0
SLOT_ROOM = 1
SLOT_WAIT = 2


def pool_timeout(host: str, limit: int) -> PoolTimeout:
    """The error of a call that waited for a connection slot to ``host`` until its deadline."""
    return PoolTimeout(
        f"no connection to {host} became free in time: all {limit} allowed "
        f"(max_connections_per_host) are in use",
        phase="connect",
    )


class RealConnectionPool:
    """The pool's machinery; ``fastnet.ConnectionPool`` is its public face."""

    __slots__ = (
        "max_idle",
        "keep_alive",
        "max_per_host",
        "idle",
        "order",
        "counts",
        "live",
        "abandoned",
        "discards",
        "lock",
        "cond",
        "sleepers",
    )
    max_idle: int
    keep_alive: float
    max_per_host: int  # 0: no limit
    idle: dict[Address, list[RealConnection]]
    order: dict[RealConnection, None]  # every idle connection, oldest first
    counts: dict[str, int]  # live connections (idle and in use) per host
    live: dict[RealConnection, None]  # every connection counted, idle and in use
    abandoned: deque[RealConnection]  # from collected responses, to forget at the next operation
    discards: int  # how many ``abandoned`` holds (an int test on the hot path, not a deque's)
    lock: threading.Lock
    cond: threading.Condition
    sleepers: int  # threads waiting on ``cond``: nobody to notify when there are none

    def __init__(self, max_idle: int, keep_alive: float, max_per_host: int) -> None:
        self.max_idle = max_idle
        self.keep_alive = keep_alive
        self.max_per_host = max_per_host
        self.idle = {}
        self.order = {}
        self.counts = {}
        self.live = {}
        self.abandoned = deque()
        self.discards = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.sleepers = 0

    def acquire(self, address: Address, now: float) -> RealConnection | None:
        """Take the most recently used idle connection for ``address``, or None (``now`` is
        ``time.monotonic()``, which the caller needs too)."""
        if self.discards:
            with self.lock:
                self._settle()
        stack = self.idle.get(address)
        if not stack:
            return None
        found = None
        expired: list[RealConnection] | None = None
        keep_alive = self.keep_alive
        lock = self.lock
        lock.acquire()
        try:
            while stack:
                conn = stack.pop()
                del self.order[conn]
                if now - conn.idle_at >= keep_alive or conn.closed:
                    if expired is None:
                        expired = []
                    expired.append(conn)
                    self._forget(conn)
                    continue
                found = conn
                break
            if not stack:
                self.idle.pop(address, None)
        finally:
            lock.release()
        if expired is not None:
            for conn in expired:
                conn.close()
        return found

    def reserve(self, host: str, deadline: float) -> None:
        """Count a connection about to be opened to ``host``; waits while the host is at its limit."""
        limit = self.max_per_host
        lock = self.lock
        lock.acquire()  # the condition's own lock; a plain acquire avoids Condition's Python-level __enter__
        try:
            if self.discards:
                self._settle()
            count = self.counts.get(host, 0)
            if limit > 0:
                while count >= limit:
                    victim = self._idle_victim(host)
                    if victim is not None:
                        self._remove_idle(victim)
                        self._forget(victim)
                        victim.close()
                        count = self.counts.get(host, 0)
                        continue
                    self._wait_for_release(host, deadline)
                    count = self.counts.get(host, 0)
            self.counts[host] = count + 1
        finally:
            lock.release()

    def wait_for_slot(self, address: Address, deadline: float) -> bool:
        """Under a per-host limit, wait until ``address`` has an idle connection (True: acquire it) or
        the host has room for a new one (False). A slot freed by a finished call comes back as an idle
        connection, and reusing it beats closing it to open another."""
        limit = self.max_per_host
        host = address.host
        with self.cond:
            while True:
                self._settle()
                if self.idle.get(address):
                    return True
                if self.counts.get(host, 0) < limit or self._idle_victim(host) is not None:
                    return False
                self._wait_for_release(host, deadline)

    def slot_state(self, address: Address) -> int:
        """``wait_for_slot``'s question asked once, without waiting: ``SLOT_IDLE`` (``address`` has an
        idle connection), ``SLOT_ROOM`` (the host has room, or an idle connection to another address of
        it that a new one may replace) or ``SLOT_WAIT``. For a pool whose callers wait elsewhere (asyncio)."""
        limit = self.max_per_host
        host = address.host
        with self.lock:
            self._settle()
            if self.idle.get(address):
                return SLOT_IDLE
            if limit <= 0 or self.counts.get(host, 0) < limit or self._idle_victim(host) is not None:
                return SLOT_ROOM
            return SLOT_WAIT

    def room(self, host: str) -> int:
        """How many calls could get a connection to ``host`` now without waiting, under a per-host limit:
        its free slots plus its idle connections (each one reused, or replaced by a new connection)."""
        with self.lock:
            self._settle()
            free = self.max_per_host - self.counts.get(host, 0)
            for conn in self.order:
                if conn.address.host == host:
                    free += 1
            return free

    def try_reserve(self, host: str) -> bool:
        """``reserve`` without waiting: count a connection about to be opened to ``host`` and return True,
        or return False while every slot of the host is in use. An idle connection to the host is closed
        to make room, as ``reserve`` does; its slot goes to the new connection."""
        limit = self.max_per_host
        victim = None
        with self.lock:
            self._settle()
            count = self.counts.get(host, 0)
            if limit > 0 and count >= limit:
                victim = self._idle_victim(host)
                if victim is None:
                    return False
                self._remove_idle(victim)
                victim.pool = None
                del self.live[victim]  # the count stays: the slot passes to the new connection
            else:
                self.counts[host] = count + 1
        if victim is not None:
            victim.close()
        return True

    def slot_freed(self, host: str) -> None:
        """Under the lock, with a per-host limit: a slot of ``host`` was freed, or a connection to it went
        idle. Wakes the threads waiting in ``reserve`` or ``wait_for_slot``; an asyncio pool overrides it
        to wake its first waiter instead."""
        if self.sleepers:
            self.cond.notify_all()

    def _wait_for_release(self, host: str, deadline: float) -> None:
        """Under the lock: wait (at most 0.5 s at a time) for a connection to ``host`` to be released;
        ``PoolTimeout`` once ``deadline`` (0: none) has passed."""
        wait = 3600.0 if deadline <= 0 else deadline - time.monotonic()
        if wait <= 0:
            raise pool_timeout(host, self.max_per_host)
        self.sleepers += 1
        try:
            self.cond.wait(min(wait, 0.5))
        finally:
            self.sleepers -= 1
        if self.discards:  # a response collected while this thread waited may have freed the slot
            self._settle()

    def unreserve(self, host: str) -> None:
        with self.lock:
            self._decrement(host)

    def register(self, conn: RealConnection) -> None:
        """A new connection (already counted by ``reserve``) now belongs to the pool."""
        with self.lock:
            conn.pool = self
            self.live[conn] = None

    def discard_later(self, conn: RealConnection) -> None:
        """A closed connection whose response was collected unread: forgotten at the next operation.
        Safe from a finalizer, which may run while this very thread holds the lock: it never waits for
        the lock. When threads wait for a slot and the lock is free, the connection is forgotten now,
        which wakes them; else a waiting thread finds it within 0.5 s (``_wait_for_release``)."""
        self.abandoned.append(conn)
        self.discards += 1
        if self.sleepers:
            lock = self.lock
            if lock.acquire(False):
                try:
                    self._settle()
                finally:
                    lock.release()

    def settle(self) -> None:
        """Forget the connections ``discard_later`` queued now (their slots are freed, waking a waiter)."""
        with self.lock:
            self._settle()

    def _settle(self) -> None:
        """Under the lock: forget the connections ``discard_later`` queued."""
        abandoned = self.abandoned
        while abandoned:
            self.discards -= 1
            self._forget(abandoned.popleft())

    def release(self, conn: RealConnection, reusable: bool) -> None:
        """A call is done with ``conn``: keep it idle when reusable, else close it. A new TLS
        connection first gives its session for the next connection to its address to resume."""
        if conn.gives_tls_session:
            conn.give_tls_session()
        to_close = None
        now = time.monotonic()
        lock = self.lock
        lock.acquire()  # the condition's own lock; a plain acquire avoids Condition's Python-level __enter__
        try:
            if self.discards:
                self._settle()
            if conn in self.order:
                return  # released twice
            if reusable and self.max_idle > 0 and not conn.closed and conn.pool is self:
                conn.idle_at = now
                address = conn.address
                stack = self.idle.get(address)
                if stack is None:
                    self.idle[address] = [conn]
                else:
                    stack.append(conn)
                self.order[conn] = None
                if len(self.order) > self.max_idle or now - next(iter(self.order)).idle_at >= self.keep_alive:
                    to_close = self._evict(now)
                if self.max_per_host > 0:
                    self.slot_freed(address.host)  # an idle connection to reuse (or to replace)
            else:
                self._forget(conn)  # frees its slot (slot_freed)
                to_close = [conn]
        finally:
            lock.release()
        if to_close:
            for c in to_close:
                c.close()

    def _evict(self, now: float) -> list[RealConnection] | None:
        """Expired idle connections and, past max_idle, the oldest idle ones (under the lock)."""
        victims = None
        order = self.order
        while order:
            oldest = next(iter(order))
            if len(order) <= self.max_idle and now - oldest.idle_at < self.keep_alive:
                break
            self._remove_idle(oldest)
            self._forget(oldest)
            if victims is None:
                victims = []
            victims.append(oldest)
        return victims

    def _idle_victim(self, host: str) -> RealConnection | None:
        for conn in self.order:
            if conn.address.host == host:
                return conn
        return None

    def _remove_idle(self, conn: RealConnection) -> None:
        del self.order[conn]
        stack = self.idle.get(conn.address)
        if stack is not None:
            try:
                stack.remove(conn)
            except ValueError:
                pass
            if not stack:
                del self.idle[conn.address]

    def _forget(self, conn: RealConnection) -> None:
        if conn.pool is self:
            conn.pool = None
            del self.live[conn]
            self._decrement(conn.address.host)

    def _decrement(self, host: str) -> None:
        count = self.counts.get(host, 0) - 1
        if count > 0:
            self.counts[host] = count
        else:
            self.counts.pop(host, None)
        if self.max_per_host > 0:
            self.slot_freed(host)

    def evict_all(self) -> int:
        """Close every idle connection; returns how many were closed."""
        with self.cond:
            victims = list(self.order)
            for conn in victims:
                self._remove_idle(conn)
                self._forget(conn)
        for conn in victims:
            conn.close()
        return len(victims)

    def cleanup(self) -> int:
        """Evict expired idle connections now; returns how many were closed."""
        with self.cond:
            victims = self._evict(time.monotonic()) or []
        for conn in victims:
            conn.close()
        return len(victims)

    def connection_count(self) -> int:
        with self.lock:
            self._settle()
            return sum(self.counts.values())

    def idle_connection_count(self) -> int:
        with self.lock:
            return len(self.order)

    def close_all(self) -> int:
        """Close every connection, idle and in use (a call on one fails at once); the pool stays usable.
        Returns how many were closed."""
        return self.close_some(list(self.live))

    def close_some(self, conns: list[RealConnection]) -> int:
        """Close those of ``conns`` this pool holds, idle and in use; returns how many were closed."""
        with self.cond:
            self._settle()
            victims = [conn for conn in conns if conn in self.live]
            for conn in victims:
                if conn in self.order:
                    self._remove_idle(conn)
                self._forget(conn)
        for conn in victims:
            conn.shutdown()
        return len(victims)
