"""``AsyncConnectionPool``: the connection pool, with asyncio waiters for ``max_connections_per_host``.

Theory of operation
-------------------
The bookkeeping is ``RealConnectionPool``'s (compiled): idle stacks, per-host counts, one lock held for
a few dict operations and never across an ``await``. What differs is waiting. A blocking call waits on the
pool's condition; an asyncio call must not block its loop, so it asks the pool one non-blocking question
(``slot_state``, ``try_reserve``) and, when the host is full, parks a future in that host's FIFO queue:

* one future per waiting task; ``slot_freed(host)``, which the base pool calls under its lock for every
  freed slot and for every connection that went idle, wakes the first live future of that host's queue
  (O(1): a deque pop, cancelled entries skipped and dropped as they come up), so each freed slot wakes
  exactly one task: no herd, no polling;
* fair: a task that is woken re-asks the pool and, should the slot be gone after all, parks again in
  its place (by the ticket it drew when it first waited, so ahead of everyone who came later); a call
  that arrives while tasks are parked for its host, or while every free slot is promised
  to a woken task that has not run yet, queues behind them (``must_queue``) instead of taking that slot;
* a woken task that is cancelled before it ran passes its wake on to the next one, so the slot it was
  woken for is not lost; each wait ends at the call's deadline (``slot_deadline``) with the blocking
  pool's ``PoolTimeout`` message.

A connection belongs to the event loop that made it, and an event loop can end while its connections
sit in the pool (``asyncio.run`` returns, and a program calls it again with the same client). So the
first connection of each loop starts a small async generator on that loop, suspended in a ``try``: the
loop's ``shutdown_asyncgens`` (which ``asyncio.run`` and ``uvloop.run`` call before closing it) closes
the generator, and its ``finally`` closes that loop's connections. A loop closed without that step is
found out when its next connection is registered (and ``find_connection`` never hands out a
connection of another loop).

The queues belong to the event loop the waiting tasks run on (the pool binds to the running loop when a
task first waits; it may rebind once nobody waits). ``slot_freed`` may run on another thread (a
``close_all()`` from a blocking thread): it then hands the wake to the loop (``call_soon_threadsafe``),
which runs it after whatever the loop was doing, so a task between asking and parking cannot miss it.
A response collected unread frees its slot from a finalizer, which may run on any thread or in the
middle of another task's step: it only queues the connection (``discard_later``) and hands the rest to
the loop the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from fastnet._internal._sync.pool import SLOT_IDLE, SLOT_WAIT, RealConnectionPool, pool_timeout

if TYPE_CHECKING:
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet.route import Address

__all__ = ["AsyncConnectionPool"]


class _Waiters:
    """The tasks waiting for a slot of one host, first come first served."""

    __slots__ = ("futures", "parked", "woken")

    def __init__(self) -> None:
        # (ticket, future), tickets ascending; cancelled or expired entries are skipped when they come up
        self.futures: deque[tuple[int, asyncio.Future[None]]] = deque()
        self.parked = 0  # futures in ``futures`` still waiting
        self.woken = 0  # woken tasks that have not run yet


class AsyncConnectionPool(RealConnectionPool):
    """A ``RealConnectionPool`` whose per-host waits are asyncio futures (see the module doc)."""

    __slots__ = ("loop", "waiters", "tickets", "watched")
    loop: asyncio.AbstractEventLoop | None
    waiters: dict[str, _Waiters]
    tickets: itertools.count[int]  # the order in which calls first waited
    watched: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]]  # each loop's end watcher

    def __init__(self, max_idle: int, keep_alive: float, max_per_host: int) -> None:
        super().__init__(max_idle, keep_alive, max_per_host)
        self.loop = None
        self.waiters = {}
        self.tickets = itertools.count(1)
        self.watched = {}

    # -- connections of loops that end -------------------------------------------------------------

    def register(self, conn: RealConnection) -> None:
        RealConnectionPool.register(self, conn)
        loop = getattr(conn, "loop", None)
        if loop is not None and loop not in self.watched:
            self._watch(loop)

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        for old in [old for old in self.watched if old.is_closed()]:
            self._unwatch(old)  # closed without shutdown_asyncgens: close its connections now
        watcher = _loop_end(self, loop)
        self.watched[loop] = watcher
        step = watcher.asend(None)  # the loop's firstiter hook registers the generator with it
        try:
            step.send(None)  # run it to its yield, inside its try
        except StopIteration:
            pass

    def _unwatch(self, loop: asyncio.AbstractEventLoop) -> None:
        watcher = self.watched.pop(loop, None)
        if watcher is not None:
            closing = watcher.aclose()
            try:
                closing.send(None)  # runs its finally now, on no loop: nothing for the loop to finalize
            except StopIteration:
                pass

    def close_all(self) -> int:
        closed = RealConnectionPool.close_all(self)
        for loop in list(self.watched):
            self._unwatch(loop)  # nothing left to watch for: no task left to finalize the watchers
        return closed

    def loop_ended(self, loop: asyncio.AbstractEventLoop) -> None:
        """``loop`` is ending: close its connections, idle and in use."""
        self.watched.pop(loop, None)
        self.close_some([conn for conn in self.live if getattr(conn, "loop", None) is loop])

    # -- what the asyncio finder calls ------------------------------------------------------------

    def must_queue(self, host: str) -> bool:
        """Whether a call arriving now for ``host`` must queue behind the tasks waiting for it: some are
        parked, or every slot free now is promised to a task that was woken and has not run yet."""
        waiters = self.waiters.get(host)
        if waiters is None:
            return False
        return waiters.parked > 0 or (waiters.woken > 0 and self.room(host) <= waiters.woken)

    async def wait_turn(self, host: str, deadline: float) -> int:
        """Queue behind the tasks already waiting for ``host`` until woken (a slot was freed, or a
        connection to the host went idle); ``PoolTimeout`` at ``deadline`` (0: none). Returns the ticket
        that keeps the call's place should it have to wait again."""
        self._bind()
        return await self._park(host, deadline, 0)

    async def wait_for_slot_async(self, address: Address, deadline: float, ticket: int = 0) -> bool:
        """``wait_for_slot`` for asyncio: until ``address`` has an idle connection (True: acquire it) or
        its host has room for a new one (False); ``PoolTimeout`` at ``deadline`` (0: none). ``ticket``
        from an earlier wait of the same call keeps its place in the queue."""
        self._bind()  # before asking: a wake from another thread must find the loop (module doc)
        while True:
            state = self.slot_state(address)
            if state != SLOT_WAIT:
                return state == SLOT_IDLE
            ticket = await self._park(address.host, deadline, ticket)

    async def reserve_async(self, host: str, deadline: float, ticket: int = 0) -> None:
        """``reserve`` for asyncio: count a connection about to be opened to ``host``, waiting while the
        host is at its limit; ``PoolTimeout`` at ``deadline`` (0: none)."""
        self._bind()
        while not self.try_reserve(host):
            ticket = await self._park(host, deadline, ticket)

    # -- the base pool's hook ---------------------------------------------------------------------

    def slot_freed(self, host: str) -> None:
        """Wake the first task waiting for ``host`` (called under the pool's lock, on any thread), and the
        threads waiting in the blocking ``reserve``/``wait_for_slot``, should there be any."""
        super().slot_freed(host)
        loop = self.loop
        if loop is None:
            return  # no task ever waited
        if asyncio._get_running_loop() is loop:
            self._wake(host)
        else:
            try:
                loop.call_soon_threadsafe(self._wake, host)
            except RuntimeError:
                pass  # the loop is closed: nobody can be waiting on it

    def discard_later(self, conn: RealConnection) -> None:
        """A response was collected unread (from its finalizer, on any thread, maybe inside another
        task's step): queue its connection without the lock, and have the loop the tasks wait on forget
        it (``settle``, which frees the slot and wakes the first waiter) in its own turn."""
        RealConnectionPool.discard_later(self, conn)
        loop = self.loop
        if loop is not None:  # else no task ever waited: the next one to ask settles first
            try:
                loop.call_soon_threadsafe(self.settle)
            except Exception:  # noqa: BLE001 - the loop is closed (nobody waits on it); never raise here
                pass

    # -- waiting ----------------------------------------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            if self.loop is not None and any(w.parked or w.woken for w in self.waiters.values()):
                raise RuntimeError("an AsyncConnectionPool has tasks waiting on another event loop")
            self.loop = loop
            self.waiters.clear()
        return loop

    def _wake(self, host: str) -> None:
        """On the loop: resolve the first live future of ``host``'s queue, if any."""
        waiters = self.waiters.get(host)
        if waiters is None:
            return
        futures = waiters.futures
        while futures:
            _, future = futures.popleft()
            if not future.done():
                future.set_result(None)
                waiters.parked -= 1
                waiters.woken += 1
                return

    async def _park(self, host: str, deadline: float, ticket: int) -> int:
        """Wait in ``host``'s queue until woken: at the end with a new ticket (``ticket`` 0), else in the
        place of ``ticket`` (woken before, the slot went elsewhere: rare, so the O(n) insert is fine).
        Returns the ticket."""
        delay = 0.0
        if deadline > 0:
            delay = deadline - time.monotonic()
            if delay <= 0:
                raise pool_timeout(host, self.max_per_host)
        loop = self.loop
        assert loop is not None
        waiters = self.waiters.get(host)
        if waiters is None:
            waiters = self.waiters[host] = _Waiters()
        future: asyncio.Future[None] = loop.create_future()
        futures = waiters.futures
        if ticket == 0:
            ticket = next(self.tickets)
            futures.append((ticket, future))
        else:
            place = 0
            for earlier, _ in futures:
                if earlier > ticket:
                    break
                place += 1
            futures.insert(place, (ticket, future))
        waiters.parked += 1
        timer: list[asyncio.TimerHandle] = []
        if deadline > 0:
            timer.append(loop.call_later(delay, self._expire, waiters, future, host, deadline, timer))
        try:
            await future
        except BaseException:
            if not future.done():  # interrupted some other way while parked
                future.cancel()
                waiters.parked -= 1
            elif future.cancelled():  # the task was cancelled while parked: leave the queue
                waiters.parked -= 1
            elif future.exception() is None:  # woken, then cancelled before it ran: pass the wake on
                waiters.woken -= 1
                self._wake(host)
            # else the deadline passed: ``_expire`` took it off the count
            self._drop_queue(host, waiters)
            raise
        finally:
            if timer:
                timer[0].cancel()
        waiters.woken -= 1
        self._drop_queue(host, waiters)
        return ticket

    def _expire(
        self,
        waiters: _Waiters,
        future: asyncio.Future[None],
        host: str,
        deadline: float,
        timer: list[asyncio.TimerHandle],
    ) -> None:
        if future.done():
            return
        left = deadline - time.monotonic()
        if left > 0:  # the loop's clock ran ahead (uvloop's is cached per iteration): not yet
            assert self.loop is not None
            timer[0] = self.loop.call_later(left, self._expire, waiters, future, host, deadline, timer)
            return
        future.set_exception(pool_timeout(host, self.max_per_host))
        waiters.parked -= 1

    def _drop_queue(self, host: str, waiters: _Waiters) -> None:
        """Drop ``host``'s queue once nobody is in it (its skipped entries with it)."""
        if waiters.parked == 0 and waiters.woken == 0 and self.waiters.get(host) is waiters:
            del self.waiters[host]


async def _loop_end(pool: AsyncConnectionPool, loop: asyncio.AbstractEventLoop) -> AsyncGenerator[None, None]:
    """Suspended on ``loop`` until the loop's ``shutdown_asyncgens`` closes it: then ``loop``'s
    connections are closed."""
    try:
        yield
    finally:
        pool.loop_ended(loop)
