"""Connect a TCP socket to the first route that answers: RFC 8305 racing without threads.

Theory of operation: every attempt is a non-blocking socket whose ``connect`` is in flight; one
``poll`` (or ``select``) in the calling thread waits for any of them to become writable, for the
next launch time, for the earliest connect deadline, or for the next cancellation check, whichever
comes first. Rules:

* attempt *i+1* starts ``attempt_delay`` (250 ms) after attempt *i*, or at once when no attempt is
  in flight (every started one already failed);
* each attempt has the full ``connect_timeout`` from its own start;
* the first socket to connect wins; every other in-flight socket is closed (not a failure);
* each failure is reported to ``on_failure`` as it happens and returned with the winner;
* with ``happy_eyeballs=False`` attempts are strictly sequential (the next starts when one fails);
* ``is_canceled()`` is polled at least every 50 ms.

When all fail the error is :class:`~fastnet.exceptions.ConnectTimeout` if every failure was a
timeout, else :class:`~fastnet.exceptions.ConnectError`; both carry ``attempts`` = [(route, error)].
Route order (family interleaving) is the route selector's job; this module keeps the order given.

A single route, the common case (one address, or a retry on a known route), skips the racing loop:
``connect_one`` is a blocking ``connect`` bounded by ``SO_SNDTIMEO``, which the exchange finder calls
directly. Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import _socket
import errno
import os
import selectors
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastnet._internal.util.kernel_timeout import set_kernel_timeout
from fastnet._internal.util.sockets import hostport
from fastnet.exceptions import CanceledError, ConnectError, ConnectTimeout
from fastnet.route import is_ip_literal

__all__ = [
    "CANCEL_CHECK_INTERVAL",
    "DEFAULT_ATTEMPT_DELAY",
    "all_failed",
    "connect_error",
    "connect_one",
    "connect_tcp",
    "default_target",
    "describe_target",
    "new_socket",
    "sockaddr_of",
]

DEFAULT_ATTEMPT_DELAY = 0.25
CANCEL_CHECK_INTERVAL = 0.05

_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EALREADY}
if hasattr(errno, "WSAEWOULDBLOCK"):  # pragma: no cover - Windows
    _IN_PROGRESS.add(errno.WSAEWOULDBLOCK)

R = TypeVar("R")
_AF_INET = int(socket.AF_INET)
_AF_INET6 = int(socket.AF_INET6)
_SOCK_STREAM = int(socket.SOCK_STREAM)
_SO_SNDTIMEO = socket.SO_SNDTIMEO
_IPPROTO_TCP = socket.IPPROTO_TCP
_TCP_NODELAY = socket.TCP_NODELAY
_C_SOCKET = _socket.socket  # the C type a blocking socket.socket is an instance of (gevent's is not)


def default_target(route: Any) -> tuple[str, int]:
    """Where a route's TCP connect goes by default: its socket address."""
    return route.socket_address  # type: ignore[no-any-return]


def describe_target(route: Any, target: tuple[str, int]) -> str:
    """How an attempt is named in timeout messages by default: ``host:port``."""
    return hostport(target[0], target[1])


def sockaddr_of(target: tuple[str, int]) -> tuple[int, Any]:
    """The address family and sockaddr for ``target``; a host name is resolved (first answer)."""
    host = target[0]
    if ":" in host:
        return _AF_INET6, target
    if is_ip_literal(host):
        return _AF_INET, target
    # Only reached for a proxy given by name (SOCKS routes connect to the proxy, see ``target_of``).
    infos = socket.getaddrinfo(host, target[1], type=socket.SOCK_STREAM)
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


def _new_selector() -> selectors.BaseSelector:
    # poll needs no file descriptor of its own, unlike epoll; select is the portable fallback
    if hasattr(selectors, "PollSelector"):
        return selectors.PollSelector()
    return selectors.SelectSelector()  # pragma: no cover - Windows


class _Attempt:
    __slots__ = ("route", "target", "sock", "deadline")

    def __init__(self, route: Any, target: tuple[str, int], sock: socket.socket, deadline: float) -> None:
        self.route = route
        self.target = target
        self.sock = sock
        self.deadline = deadline


def new_socket(family: int, local_address: str | None) -> socket.socket:
    """A TCP socket of ``family``, bound to ``local_address`` (any port) when one is given; an address of
    the other family is an ``OSError`` that says so, which fails that route like a refused connect."""
    sock = socket.socket(family, _SOCK_STREAM)
    if local_address is not None:
        try:
            if (":" in local_address) != (family == _AF_INET6):
                version = 6 if family == _AF_INET6 else 4
                raise OSError(f"local address {local_address} cannot connect to an IPv{version} address")
            sock.bind((local_address, 0))
        except BaseException:
            sock.close()
            raise
    return sock


def connect_tcp(
    routes: Sequence[R],
    *,
    connect_timeout: float | None,
    happy_eyeballs: bool = True,
    attempt_delay: float = DEFAULT_ATTEMPT_DELAY,
    is_canceled: Callable[[], bool] | None = None,
    on_failure: Callable[[R, BaseException], None] | None = None,
    target_of: Callable[[R], tuple[str, int]] = default_target,
    on_overtaken: Callable[[R, BaseException], None] | None = None,
    on_socket: Callable[[socket.socket | None], None] | None = None,
    describe: Callable[[R, tuple[str, int]], str] | None = None,
    local_address: str | None = None,
) -> tuple[socket.socket, R, list[tuple[R, BaseException]]]:
    """Connect to the first of ``routes`` that answers; returns ``(socket, route, failures)``. Sockets
    bind to ``local_address`` (an IP address, any port) first when it is given.

    ``connect_timeout`` of ``None`` or ``0`` means no timeout. The socket is returned in blocking
    mode with ``TCP_NODELAY`` set and ``SO_SNDTIMEO`` at the connect timeout (unset without one), which a
    caller whose write timeout is the same need not set again; ``failures`` lists the attempts that
    failed before it won.
    ``describe(route, target)`` names an attempt in timeout messages (default: ``host:port``). A refused
    or unreachable attempt fails with the ``OSError`` of its errno, which names no address: the route
    it belongs to is reported with it.

    >>> sock, route, failures = connect_tcp(routes, connect_timeout=10.0)   # doctest: +SKIP
    """
    if not routes:
        raise ConnectError("no routes to connect to")
    timeout = connect_timeout if connect_timeout else None
    name = describe_target if describe is None else describe
    if len(routes) == 1 and (is_canceled is None or on_socket is not None):
        route = routes[0]
        return connect_one(
            route, target_of(route), timeout or 0.0, on_failure, on_socket, name, local_address
        )
    pending = list(routes)
    pending.reverse()  # pop() from the end takes routes in their given order
    failures: list[tuple[R, BaseException]] = []
    in_flight: dict[int, _Attempt] = {}
    selector = _new_selector()
    next_launch = 0.0
    winner: _Attempt | None = None

    def fail(attempt_route: R, error: BaseException) -> None:
        failures.append((attempt_route, error))
        if on_failure is not None:
            on_failure(attempt_route, error)

    def drop(attempt: _Attempt) -> None:
        del in_flight[attempt.sock.fileno()]
        selector.unregister(attempt.sock)
        attempt.sock.close()

    try:
        while True:
            if is_canceled is not None and is_canceled():
                raise CanceledError("Canceled while connecting", phase="connect")
            now = time.monotonic()
            # Launch the next attempt when nothing is in flight or its turn has come.
            if pending and (not in_flight or (happy_eyeballs and now >= next_launch)):
                route = pending.pop()
                target = target_of(route)
                sock = None
                try:
                    family, sockaddr = sockaddr_of(target)
                    sock = new_socket(family, local_address)
                    sock.setblocking(False)
                    code = sock.connect_ex(sockaddr)
                except OSError as exc:
                    if sock is not None:
                        sock.close()
                    fail(route, exc)
                    continue
                deadline = now + timeout if timeout is not None else float("inf")
                attempt = _Attempt(route, target, sock, deadline)
                if code == 0:
                    winner = attempt
                    break
                if code not in _IN_PROGRESS:
                    sock.close()
                    fail(route, connect_error(code))
                    continue
                in_flight[sock.fileno()] = attempt
                selector.register(sock, selectors.EVENT_WRITE, attempt)
                next_launch = now + attempt_delay
                continue
            if not in_flight:
                break  # nothing pending, nothing in flight: every route failed
            # Wait for a connect to finish, the next launch, the earliest deadline or a cancel check.
            wake = min(a.deadline for a in in_flight.values())
            if pending and happy_eyeballs:
                wake = min(wake, next_launch)
            wait = wake - now
            if is_canceled is not None:
                wait = min(wait, CANCEL_CHECK_INTERVAL)
            wait = max(wait, 0.0)
            ready = selector.select(None if wait == float("inf") else wait)
            for key, _ in ready:
                attempt = key.data
                code = attempt.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    winner = attempt
                    break
                drop(attempt)
                fail(attempt.route, connect_error(code))
            if winner is not None:
                break
            now = time.monotonic()
            for attempt in [a for a in in_flight.values() if a.deadline <= now]:
                drop(attempt)
                fail(
                    attempt.route,
                    ConnectTimeout(
                        f"Connect to {name(attempt.route, attempt.target)} timed out after {timeout:g} s",
                        phase="connect",
                    ),
                )
    except BaseException:
        for attempt in list(in_flight.values()):
            drop(attempt)
        if winner is not None:
            winner.sock.close()
        selector.close()
        raise

    # Close the losers (still in flight: not failures) and hand back the winner. An attempt that started
    # before the winner and still had not connected was overtaken: a slow or black-holed address that
    # ``on_overtaken`` may count (the DNS blacklist does); it is not a route failure.
    for attempt in list(in_flight.values()):
        if attempt is not winner:
            drop(attempt)
            if on_overtaken is not None and winner is not None and attempt.deadline < winner.deadline:
                on_overtaken(
                    attempt.route,
                    ConnectTimeout(
                        f"Connect to {name(attempt.route, attempt.target)} was overtaken by a faster address",
                        phase="connect",
                    ),
                )
    selector.close()
    if winner is None:
        raise all_failed(failures)
    sock = winner.sock
    try:
        sock.setblocking(True)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if timeout is not None:
            set_kernel_timeout(sock, _SO_SNDTIMEO, timeout)
    except OSError as exc:
        sock.close()
        fail(winner.route, exc)
        raise all_failed(failures) from exc
    return sock, winner.route, failures


def connect_one(
    route: Any,
    target: tuple[str, int],
    timeout: float,
    on_failure: Callable[[Any, BaseException], None] | None,
    on_socket: Callable[[socket.socket | None], None] | None,
    name: Callable[[Any, tuple[str, int]], str],
    local_address: str | None,
) -> tuple[socket.socket, Any, list[tuple[Any, BaseException]]]:
    """Connect to one route at ``target``; returns ``(socket, route, [])`` as ``connect_tcp`` does, and
    raises as it does. ``timeout`` of ``0`` means none.

    A blocking ``connect`` bounded by ``SO_SNDTIMEO`` (Linux honours it for connect): three system calls
    instead of the racing loop's seven. A cooperative (gevent) socket, which never blocks in the kernel,
    is bounded by its own timeout instead. ``on_socket`` lets the caller abort it (cancel) with
    ``shutdown()``, which makes the blocking connect fail at once."""
    sock = None
    try:
        family, sockaddr = sockaddr_of(target)
        sock = new_socket(family, local_address)
        if timeout > 0:
            set_kernel_timeout(sock, _SO_SNDTIMEO, timeout)
        cooperative = not isinstance(sock, _C_SOCKET)  # gevent's: waits in its hub, not the kernel
        if cooperative:
            sock.settimeout(timeout if timeout > 0 else None)
        if on_socket is not None:
            on_socket(sock)
        sock.connect(sockaddr)
        if cooperative:
            sock.settimeout(None)
        sock.setsockopt(_IPPROTO_TCP, _TCP_NODELAY, 1)
    except (TimeoutError, BlockingIOError) as exc:
        if sock is not None:
            sock.close()
        after = f" after {timeout:g} s" if timeout > 0 else ""
        error: BaseException = ConnectTimeout(
            f"Connect to {name(route, target)} timed out{after}", phase="connect"
        )
        error.__cause__ = exc
        if on_failure is not None:
            on_failure(route, error)
        raise all_failed([(route, error)]) from exc
    except OSError as exc:
        if sock is not None:
            sock.close()
        failure = connect_error(exc.errno) if exc.errno else exc
        if on_failure is not None:
            on_failure(route, failure)
        raise all_failed([(route, failure)]) from exc
    finally:
        if on_socket is not None:
            on_socket(None)
    return sock, route, []


def connect_error(code: int) -> OSError:
    """The ``OSError`` (``ConnectionRefusedError`` for ECONNREFUSED, ...) for a connect's errno."""
    try:
        reason = os.strerror(code)
    except ValueError:  # pragma: no cover
        reason = f"error {code}"
    return OSError(code, reason)


def all_failed(failures: list[tuple[Any, BaseException]]) -> ConnectError | ConnectTimeout:
    first_route, first_error = failures[0]
    if len(failures) == 1:
        message = f"Failed to connect to {first_route}: {first_error}"
    else:
        message = f"Failed to connect: all {len(failures)} routes failed"
    if all(isinstance(error, (ConnectTimeout, TimeoutError)) for _, error in failures):
        if len(failures) > 1:
            message += " [tried " + "; ".join(f"{route}: {error}" for route, error in failures) + "]"
        timeout_error = ConnectTimeout(message, phase="connect")
        timeout_error.attempts = list(failures)  # type: ignore[attr-defined]
        timeout_error.__cause__ = first_error
        return timeout_error
    error = ConnectError(message, phase="connect", attempts=failures)
    error.__cause__ = first_error
    return error
