"""Connect a TCP socket to the first route that answers, on the running asyncio loop (RFC 8305).

Theory of operation: the asyncio twin of ``happy_eyeballs.connect_tcp``, with the same rules, messages
and callbacks. Each attempt is a task awaiting ``loop.sock_connect`` on a non-blocking socket; the
racing coroutine waits (``asyncio.wait``) for the first attempt to finish, for the next launch time or
for the earliest connect deadline, whichever comes first:

* attempt *i+1* starts ``attempt_delay`` (250 ms) after attempt *i*, or at once when no attempt is
  in flight (every started one already failed); with ``happy_eyeballs=False`` strictly one at a time;
* each attempt has the full ``connect_timeout`` from its own start;
* the first socket to connect wins (``TCP_NODELAY`` set; it stays non-blocking, for a transport);
  every other attempt is cancelled and its socket closed: not a failure, but one that started before
  the winner was overtaken (``on_overtaken``);
* each failure is reported to ``on_failure`` as it happens and returned with the winner.

``on_race(race)`` hands the caller the ``Race`` before the first attempt: ``race.abort()`` (plain
code on the loop's thread, e.g. a call's ``cancel()``) cancels every attempt at once and the race ends
with :class:`~fastnet.exceptions.CanceledError`. However the race ends (a winner, every route failed,
an abort, or the awaiting task cancelled) it has cancelled and awaited each of its attempt tasks and
closed every socket but the winner's: no task and no socket outlives it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastnet._internal._sync.happy_eyeballs import (
    DEFAULT_ATTEMPT_DELAY,
    all_failed,
    connect_error,
    default_target,
    describe_target,
    new_socket,
    sockaddr_of,
)
from fastnet.exceptions import CanceledError, ConnectError, ConnectTimeout
from fastnet.route import is_ip_literal

__all__ = ["Race", "connect_tcp_async"]

R = TypeVar("R")
_INF = float("inf")


class _Attempt:
    __slots__ = ("route", "target", "sock", "deadline", "task")

    def __init__(self, route: Any, target: tuple[str, int], sock: socket.socket, deadline: float) -> None:
        self.route = route
        self.target = target
        self.sock = sock
        self.deadline = deadline
        self.task: asyncio.Task[None] | None = None


class Race:
    """The attempts of one ``connect_tcp_async``, so that a canceller can abort them."""

    __slots__ = ("in_flight", "aborted")

    def __init__(self) -> None:
        self.in_flight: list[_Attempt] = []  # in launch order
        self.aborted = False

    def abort(self) -> None:
        """Cancel every attempt now; the race raises ``CanceledError`` (call it on the loop's thread)."""
        self.aborted = True
        for attempt in self.in_flight:
            if attempt.task is not None:
                attempt.task.cancel()


def _close_unless_connected(sock: socket.socket) -> Callable[[asyncio.Task[None]], None]:
    """A done callback for an attempt's task: close the socket unless it connected. It runs once the task
    has ended, when the loop no longer watches the socket (so its descriptor may be reused safely)."""

    def done(task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is not None:
            sock.close()

    return done


async def _target_sockaddr(loop: asyncio.AbstractEventLoop, target: tuple[str, int]) -> tuple[int, Any]:
    host = target[0]
    if ":" in host or is_ip_literal(host):
        return sockaddr_of(target)  # an IP literal: no lookup
    # a proxy given by name (see happy_eyeballs.sockaddr_of): the loop's resolver, off the loop's thread
    infos = await loop.getaddrinfo(host, target[1], type=socket.SOCK_STREAM)
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


async def _finish(attempts: list[_Attempt]) -> None:
    """Cancel ``attempts``, wait until each task has ended and close their sockets."""
    tasks = []
    for attempt in attempts:
        task = attempt.task
        if task is not None:
            task.cancel()
            tasks.append(task)
    try:
        if tasks:
            await asyncio.wait(tasks)
    finally:
        for attempt in attempts:
            if attempt.task is None or attempt.task.done():
                attempt.sock.close()  # (one still ending closes its socket itself, when it has ended)


async def connect_tcp_async(
    routes: Sequence[R],
    *,
    connect_timeout: float | None,
    happy_eyeballs: bool = True,
    attempt_delay: float = DEFAULT_ATTEMPT_DELAY,
    is_canceled: Callable[[], bool] | None = None,
    on_failure: Callable[[R, BaseException], None] | None = None,
    target_of: Callable[[R], tuple[str, int]] = default_target,
    on_overtaken: Callable[[R, BaseException], None] | None = None,
    on_race: Callable[[Race | None], None] | None = None,
    describe: Callable[[R, tuple[str, int]], str] | None = None,
    local_address: str | None = None,
) -> tuple[socket.socket, R, list[tuple[R, BaseException]]]:
    """Connect to the first of ``routes`` that answers; returns ``(socket, route, failures)``, as
    ``connect_tcp`` does (the socket non-blocking, for ``loop.create_connection(sock=...)``; bound to
    ``local_address`` first when it is given).

    ``on_race`` is called with the ``Race`` before the first attempt and with ``None`` once the race has
    ended; ``is_canceled()`` is asked before each launch.
    """
    if not routes:
        raise ConnectError("no routes to connect to")
    loop = asyncio.get_running_loop()
    timeout = connect_timeout if connect_timeout else None
    name = describe_target if describe is None else describe
    pending = list(routes)
    pending.reverse()  # pop() from the end takes routes in their given order
    failures: list[tuple[R, BaseException]] = []
    race = Race()
    in_flight = race.in_flight
    next_launch = 0.0
    winner: _Attempt | None = None

    def fail(attempt_route: R, error: BaseException) -> None:
        failures.append((attempt_route, error))
        if on_failure is not None:
            on_failure(attempt_route, error)

    def check_canceled() -> None:
        if race.aborted or (is_canceled is not None and is_canceled()):
            raise CanceledError("Canceled while connecting", phase="connect")

    if on_race is not None:
        on_race(race)
    try:
        while True:
            check_canceled()
            now = time.monotonic()
            # Launch the next attempt when nothing is in flight or its turn has come.
            if pending and (not in_flight or (happy_eyeballs and now >= next_launch)):
                route = pending.pop()
                target = target_of(route)
                sock = None
                try:
                    family, sockaddr = await _target_sockaddr(loop, target)
                    sock = new_socket(family, local_address)
                    sock.setblocking(False)
                except OSError as exc:
                    if sock is not None:
                        sock.close()
                    fail(route, exc)
                    continue
                attempt = _Attempt(route, target, sock, now + timeout if timeout is not None else _INF)
                in_flight.append(attempt)
                task = loop.create_task(loop.sock_connect(sock, sockaddr))
                task.add_done_callback(_close_unless_connected(sock))
                attempt.task = task
                next_launch = now + attempt_delay
                continue
            if not in_flight:
                break  # nothing pending, nothing in flight: every route failed
            # Wait for a connect to finish, the next launch or the earliest deadline.
            wake = min(a.deadline for a in in_flight)
            if pending and happy_eyeballs:
                wake = min(wake, next_launch)
            wait = None if wake == _INF else max(wake - now, 0.0)
            await asyncio.wait(
                [a.task for a in in_flight if a.task is not None],
                timeout=wait,
                return_when=asyncio.FIRST_COMPLETED,
            )
            check_canceled()
            for attempt in list(in_flight):  # in launch order: the earliest success wins
                done = attempt.task
                if done is None or not done.done():
                    continue
                if done.cancelled():
                    raise asyncio.CancelledError()  # not our abort: someone cancelled the attempt
                in_flight.remove(attempt)
                error = done.exception()
                if error is None:
                    winner = attempt
                    break
                if isinstance(error, OSError) and error.errno:
                    error = connect_error(error.errno)  # the errno's own message, as connect_tcp's
                fail(attempt.route, error)
            if winner is not None:
                break
            now = time.monotonic()
            expired = [a for a in in_flight if a.deadline <= now]
            if expired:
                for attempt in expired:
                    in_flight.remove(attempt)
                await _finish(expired)
                for attempt in expired:
                    fail(
                        attempt.route,
                        ConnectTimeout(
                            f"Connect to {name(attempt.route, attempt.target)} timed out after {timeout:g} s",
                            phase="connect",
                        ),
                    )
        # Cancel the losers (still in flight: not failures) and hand back the winner. An attempt that started
        # before the winner and still had not connected was overtaken: a slow or black-holed address that
        # ``on_overtaken`` may count (the DNS blacklist does); it is not a route failure.
        losers = list(in_flight)
        in_flight.clear()
        await _finish(losers)
        check_canceled()
    except BaseException:
        losers = list(in_flight)
        in_flight.clear()
        try:
            await _finish(losers)
        finally:
            if winner is not None:
                winner.sock.close()
            if on_race is not None:
                on_race(None)
        raise
    if on_race is not None:
        on_race(None)
    if winner is None:
        raise all_failed(failures)
    for attempt in losers:
        if on_overtaken is not None and attempt.deadline < winner.deadline:
            on_overtaken(
                attempt.route,
                ConnectTimeout(
                    f"Connect to {name(attempt.route, attempt.target)} was overtaken by a faster address",
                    phase="connect",
                ),
            )
    sock = winner.sock
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError as exc:
        sock.close()
        fail(winner.route, exc)
        raise all_failed(failures) from exc
    return sock, winner.route, failures
