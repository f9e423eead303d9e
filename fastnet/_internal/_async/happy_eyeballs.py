"""Connect a TCP socket to the first route that answers: RFC 8305 racing.

Theory of operation
-------------------
The attempts race in the I/O backend's ``AsyncRace`` (``_async/io.py``: each attempt a task awaiting
``loop.sock_connect`` on a non-blocking socket; ``_sync/io.py``: non-blocking sockets whose ``connect`` is
in flight, waited for by one ``poll``, or ``select``, in the calling thread). The racing coroutine waits for
the first attempt to finish, for the next launch time or for the earliest connect deadline, whichever comes
first. Rules:

* attempt *i+1* starts ``attempt_delay`` (250 ms) after attempt *i*, or at once when no attempt is
  in flight (every started one already failed); with ``happy_eyeballs=False`` strictly one at a time;
* each attempt has the full ``connect_timeout`` from its own start;
* the first socket to connect wins (``TCP_NODELAY`` set); every other attempt is stopped and its socket
  closed: not a failure, but one that started before the winner was overtaken (``on_overtaken``);
* each failure is reported to ``on_failure`` as it happens and returned with the winner.

When all fail the error is :class:`~fastnet.exceptions.ConnectTimeout` if every failure was a
timeout, else :class:`~fastnet.exceptions.ConnectError`; both carry ``attempts`` = [(route, error)].
Route order (family interleaving) is the route selector's job; this module keeps the order given.

``on_connecting(race)`` hands the caller the race before the first attempt (and None once it ended):
``race.abort()`` makes it end with :class:`~fastnet.exceptions.CanceledError`, as ``is_canceled()``
does, which is asked before each launch. However the race ends (a winner, every route failed, an abort,
or the awaiting task cancelled) it has stopped each of its attempts and closed every socket but the
winner's: no task and no socket outlives it.

.. async-only
The asyncio source of ``_sync/happy_eyeballs.py`` (``scripts/unasync.py``). On asyncio the winner stays
non-blocking, for ``loop.create_connection(sock=...)``; ``race.abort()`` (plain code on the loop's thread,
e.g. a call's ``cancel()``) cancels every attempt's task at once.
.. end
.. sync-only
The blocking form, generated from ``_async/happy_eyeballs.py``: the winner is returned blocking with
``SO_SNDTIMEO`` at the connect timeout; ``is_canceled()`` and an abort are noticed within
``CANCEL_CHECK_INTERVAL`` (50 ms). A single route, the common case (one address, or a retry on a known
route), skips the racing loop: ``connect_one`` (``_sync/io.py``) is a blocking ``connect`` bounded by
``SO_SNDTIMEO``, which ``on_connecting`` is given the socket of, to abort it with ``shutdown()``. Compiled
in place, typed by its ``.pxd``, in the compiled build.
.. end
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from fastnet._internal._async.io import IN_FLIGHT, AsyncRace
from fastnet._internal.util.sockets import all_failed, connect_error, hostport, new_socket
from fastnet.exceptions import ConnectError, ConnectTimeout

# sync-only: from fastnet._internal._sync.io import connect_one

if TYPE_CHECKING:
    import asyncio

    from fastnet._internal._async.io import Connecting

__all__ = ["DEFAULT_ATTEMPT_DELAY", "connect_tcp_async", "default_target", "describe_target"]

DEFAULT_ATTEMPT_DELAY = 0.25

R = TypeVar("R")
_INF = float("inf")


# Any: connect_tcp is generic in its routes (``R``), and a default argument cannot be typed by ``R``:
# any route with a ``socket_address``
def default_target(route: Any) -> tuple[str, int]:
    """Where a route's TCP connect goes by default: its socket address."""
    return route.socket_address  # type: ignore[no-any-return]


def describe_target(route: object, target: tuple[str, int]) -> str:
    """How an attempt is named in timeout messages by default: ``host:port``."""
    return hostport(target[0], target[1])


class _Attempt:
    __slots__ = ("route", "target", "sock", "deadline", "task")

    # ``route`` is whatever connect_tcp's caller gives (its ``R``): Any, as a cdef class cannot be Generic
    def __init__(self, route: Any, target: tuple[str, int], sock: socket.socket, deadline: float) -> None:
        self.route = route
        self.target = target
        self.sock = sock
        self.deadline = deadline
        self.task: asyncio.Task[None] | None = None  # asyncio: the task awaiting the connect


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
    on_connecting: Callable[[Connecting], None] | None = None,
    describe: Callable[[R, tuple[str, int]], str] | None = None,
    local_address: str | None = None,
) -> tuple[socket.socket, R, list[tuple[R, BaseException]]]:
    """Connect to the first of ``routes`` that answers; returns ``(socket, route, failures)``. Sockets
    bind to ``local_address`` (an IP address, any port) first when it is given.

    ``connect_timeout`` of ``None`` or ``0`` means no timeout; ``failures`` lists the attempts that failed
    before the winner. ``describe(route, target)`` names an attempt in timeout messages (default:
    ``host:port``). A refused or unreachable attempt fails with the ``OSError`` of its errno, which names
    no address: the route it belongs to is reported with it. ``on_connecting`` is called with what aborts
    the connect (the race) before the first attempt and with ``None`` once it has ended.

    .. sync-only
    The socket is returned in blocking mode with ``TCP_NODELAY`` set and ``SO_SNDTIMEO`` at the connect
    timeout (unset without one), which a caller whose write timeout is the same need not set again.

    >>> sock, route, failures = connect_tcp(routes, connect_timeout=10.0)   # doctest: +SKIP
    .. end
    """
    if not routes:
        raise ConnectError("no routes to connect to")
    timeout = connect_timeout if connect_timeout else None
    name = describe_target if describe is None else describe
    # sync-only: if len(routes) == 1 and (is_canceled is None or on_connecting is not None):
    # sync-only:     route = routes[0]
    # sync-only:     target = target_of(route)
    # sync-only:     return connect_one(
    # sync-only:         route, target, timeout or 0.0, on_failure, on_connecting, name, local_address
    # sync-only:     )
    pending = list(routes)
    pending.reverse()  # pop() from the end takes routes in their given order
    failures: list[tuple[R, BaseException]] = []
    race = AsyncRace(is_canceled)
    next_launch = 0.0
    winner: _Attempt | None = None
    losers: list[_Attempt] = []

    def fail(attempt_route: R, error: BaseException) -> None:
        failures.append((attempt_route, error))
        if on_failure is not None:
            on_failure(attempt_route, error)

    if on_connecting is not None:
        on_connecting(race)
    try:
        while True:
            race.check_canceled()
            now = time.monotonic()
            # Launch the next attempt when nothing is in flight or its turn has come.
            if pending and (not race.in_flight or (happy_eyeballs and now >= next_launch)):
                route = pending.pop()
                target = target_of(route)
                sock = None
                try:
                    family, sockaddr = await race.sockaddr_of(target)
                    sock = new_socket(family, local_address)
                    sock.setblocking(False)
                    attempt = _Attempt(route, target, sock, now + timeout if timeout is not None else _INF)
                    code = race.start(attempt, sockaddr)
                except OSError as exc:
                    if sock is not None:
                        sock.close()
                    fail(route, exc)
                    continue
                if code == 0:
                    winner = attempt
                    break
                if code != IN_FLIGHT:
                    sock.close()
                    fail(route, connect_error(code))
                    continue
                next_launch = now + attempt_delay
                continue
            if not race.in_flight:
                break  # nothing pending, nothing in flight: every route failed
            # Wait for a connect to finish, the next launch or the earliest deadline.
            wake = min(a.deadline for a in race.in_flight)
            if pending and happy_eyeballs:
                wake = min(wake, next_launch)
            # the finished attempts (on asyncio in launch order: the earliest success wins)
            for attempt in await race.wait(wake - now):
                error = race.outcome(attempt)
                if error is None:
                    winner = attempt
                    break
                race.drop(attempt)
                fail(attempt.route, error)
            if winner is not None:
                break
            now = time.monotonic()
            expired = [a for a in race.in_flight if a.deadline <= now]
            if expired:
                await race.finish(expired)
                for attempt in expired:
                    fail(
                        attempt.route,
                        ConnectTimeout(
                            f"Connect to {name(attempt.route, attempt.target)} timed out after {timeout:g} s",
                            phase="connect",
                        ),
                    )
        # Stop the losers (still in flight: not failures) and hand back the winner. An attempt that started
        # before the winner and still had not connected was overtaken: a slow or black-holed address that
        # ``on_overtaken`` may count (the DNS blacklist does); it is not a route failure.
        losers = [a for a in race.in_flight if a is not winner]
        await race.finish(losers)
        race.check_canceled()  # async-only
    except BaseException:
        try:
            await race.finish(list(race.in_flight))
        finally:
            if winner is not None:
                winner.sock.close()
            race.close()
            if on_connecting is not None:
                on_connecting(None)
        raise
    race.close()
    if on_connecting is not None:
        on_connecting(None)
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
        race.won(sock, timeout)
    except OSError as exc:
        sock.close()
        fail(winner.route, exc)
        raise all_failed(failures) from exc
    return sock, winner.route, failures
