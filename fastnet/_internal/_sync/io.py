"""The blocking engine's I/O backend: what waits, wakes and runs work concurrently on threads.

The engine modules in ``_sync/`` are generated from the asyncio ones in ``_async/`` (``scripts/unasync.py``);
where the two really differ in *how* they wait or run things, the source calls ``_async/io.py``, and the
generated module calls this one, which offers the same names (modulo the ``Async`` prefix and the method
names unasync maps). Both files are written by hand; neither is generated. Each section serves one
engine module and says which.
"""

from __future__ import annotations

import _socket
import errno
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from fastnet._internal._sync.real_connection import RealConnection, set_socket_timeouts
from fastnet._internal.connection.socks import socks4a_connect, socks5_connect
from fastnet._internal.connection.tls import wrap_tls
from fastnet._internal.connection.tunnel import open_tunnel
from fastnet._internal.core.client_core import watchdog
from fastnet._internal.util.kernel_timeout import set_kernel_timeout
from fastnet._internal.util.sockets import all_failed, close_quietly, connect_error, new_socket
from fastnet.dns import as_dns
from fastnet.exceptions import CanceledError, ConnectTimeout
from fastnet.proxy import ProxyType
from fastnet.route import is_ip_literal

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterable, Sequence
    from typing import TypeAlias

    from fastnet._internal._sync.happy_eyeballs import _Attempt
    from fastnet._internal._sync.real_call import RealCall
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.tls import TlsInTlsSocket, TlsSessions
    from fastnet.authenticator import AuthenticatorLike
    from fastnet.dispatcher import Callback
    from fastnet.dns._base import DnsLike
    from fastnet.response import Response
    from fastnet.route import Address, Route

    #: What the handshakes run on: the socket (an ``ssl.SSLSocket`` after TLS), or TLS inside TLS.
    Channel: TypeAlias = socket.socket | TlsInTlsSocket
    #: What a finder's ``cancel()`` aborts: the connect race, or a socket connecting or in its handshakes.
    Connecting: TypeAlias = "Race | Channel | None"
    #: A socket address as ``connect`` takes it: ``(host, port)``, or the longer IPv6 tuple.
    SockAddr: TypeAlias = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]

__all__ = [
    "CANCEL_CHECK_INTERVAL",
    "CallFuture",
    "IN_FLIGHT",
    "Lock",
    "Queue",
    "QueueEmpty",
    "Race",
    "StateLock",
    "abort",
    "arm_call_timeout",
    "attach",
    "backoff_sleep",
    "call_failed",
    "cancel_elsewhere",
    "close_channel",
    "connect_one",
    "disarm_call_timeout",
    "interrupt",
    "lookup_host",
    "new_connection",
    "raw_mode",
    "run_in_background",
    "sockaddr_of",
    "socks4a",
    "socks5",
    "start_tls",
    "start_worker",
    "stop_workers",
    "tunnel",
]

# -- connecting ------------------------------------------------------------------------------------------
# The TCP connect race of ``happy_eyeballs`` (non-blocking sockets whose ``connect`` is in flight, waited
# for by one ``poll``, or ``select``, in the calling thread), its one-route shortcut ``connect_one``, the
# name lookups and the handshakes of ``exchange_finder`` (SOCKS, CONNECT and TLS on the socket itself,
# bounded by its kernel timeouts: the "channel" the handshakes run on; the ``RealConnection`` comes last).

#: ``Race.start``'s answer for an attempt that is connecting (0: connected, else its errno).
IN_FLIGHT = -1
#: How often a race with an ``is_canceled`` asks it (seconds): a poll cannot be woken by a cancel.
CANCEL_CHECK_INTERVAL = 0.05

_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EALREADY}
if hasattr(errno, "WSAEWOULDBLOCK"):  # pragma: no cover - Windows
    _IN_PROGRESS.add(errno.WSAEWOULDBLOCK)

_INF = float("inf")
_AF_INET = int(socket.AF_INET)
_AF_INET6 = int(socket.AF_INET6)
_SO_SNDTIMEO = socket.SO_SNDTIMEO
_IPPROTO_TCP = socket.IPPROTO_TCP
_TCP_NODELAY = socket.TCP_NODELAY
_C_SOCKET = _socket.socket  # the C type a blocking socket.socket is an instance of (gevent's is not)
_SOCKS = ProxyType.SOCKS

R = TypeVar("R")  # a route, as connect_tcp's caller gives it


def sockaddr_of(target: tuple[str, int]) -> tuple[int, SockAddr]:
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


class Race:
    """The attempts of one ``connect_tcp`` in flight, registered with one selector. ``abort()`` (any
    thread) makes the race raise ``CanceledError`` at its next check, as ``is_canceled()`` does: within
    ``CANCEL_CHECK_INTERVAL`` when there is an ``is_canceled``."""

    __slots__ = ("in_flight", "aborted", "is_canceled", "_selector")

    def __init__(self, is_canceled: Callable[[], bool] | None) -> None:
        self.in_flight: list[_Attempt] = []  # in launch order
        self.aborted = False
        self.is_canceled = is_canceled
        self._selector = _new_selector()

    def abort(self) -> None:
        self.aborted = True

    def check_canceled(self) -> None:
        if self.aborted or (self.is_canceled is not None and self.is_canceled()):
            raise CanceledError("Canceled while connecting", phase="connect")

    def sockaddr_of(self, target: tuple[str, int]) -> tuple[int, SockAddr]:
        return sockaddr_of(target)

    def start(self, attempt: _Attempt, sockaddr: SockAddr) -> int:
        """Start connecting ``attempt.sock`` (non-blocking) to ``sockaddr``: 0 when it connected at once,
        ``IN_FLIGHT`` while it connects, else the errno it failed with."""
        sock = attempt.sock
        code: int = sock.connect_ex(sockaddr)
        if code == 0:
            return 0
        if code not in _IN_PROGRESS:
            return code
        self.in_flight.append(attempt)
        self._selector.register(sock, selectors.EVENT_WRITE, attempt)
        return IN_FLIGHT

    def wait(self, seconds: float) -> list[_Attempt]:
        """Wait up to ``seconds`` (inf: no limit; at most ``CANCEL_CHECK_INTERVAL`` when there is an
        ``is_canceled``) for an attempt to finish; the finished ones."""
        if self.is_canceled is not None:
            seconds = min(seconds, CANCEL_CHECK_INTERVAL)
        seconds = max(seconds, 0.0)
        return [key.data for key, _ in self._selector.select(None if seconds == _INF else seconds)]

    def outcome(self, attempt: _Attempt) -> BaseException | None:
        """None when the finished ``attempt`` connected, else why it failed (its errno's ``OSError``)."""
        code = attempt.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        return None if code == 0 else connect_error(code)

    def drop(self, attempt: _Attempt) -> None:
        """Forget ``attempt`` and close its socket."""
        self.in_flight.remove(attempt)
        self._selector.unregister(attempt.sock)
        attempt.sock.close()

    def finish(self, attempts: list[_Attempt]) -> None:
        """Stop ``attempts`` (close their sockets)."""
        for attempt in attempts:
            self.drop(attempt)

    def close(self) -> None:
        self._selector.close()

    def won(self, sock: socket.socket, timeout: float | None) -> None:
        """Ready the winner's socket: blocking, ``TCP_NODELAY``, ``SO_SNDTIMEO`` at the connect timeout."""
        sock.setblocking(True)
        sock.setsockopt(_IPPROTO_TCP, _TCP_NODELAY, 1)
        if timeout is not None:
            set_kernel_timeout(sock, _SO_SNDTIMEO, timeout)


def connect_one(
    route: R,
    target: tuple[str, int],
    timeout: float,
    on_failure: Callable[[R, BaseException], None] | None,
    on_socket: Callable[[socket.socket | None], None] | None,
    name: Callable[[R, tuple[str, int]], str],
    local_address: str | None,
) -> tuple[socket.socket, R, list[tuple[R, BaseException]]]:
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


def abort(connecting: Connecting) -> None:
    """Abort what a finder has in flight (from any thread): the connect race, or a socket connecting or
    in its handshakes (``shutdown`` makes a blocking connect or read fail at once)."""
    if isinstance(connecting, Race):
        connecting.abort()
    elif connecting is not None:
        try:
            connecting.shutdown(socket.SHUT_RDWR)  # aborts a blocking connect at once
        except OSError:
            # not connecting yet: closing makes the connect() about to start fail at once
            close_quietly(connecting)


def lookup_host(dns: DnsLike, host: str, on_lookup: Callable[[Connecting], None]) -> Iterable[object]:
    """The client's Dns answer for ``host`` (a blocking lookup, which nothing aborts)."""
    return as_dns(dns).lookup(host)


def _has_handshake(route: Route, address: Address) -> bool:
    """Whether bytes are exchanged before the first request: SOCKS, TLS to a proxy, a CONNECT tunnel, TLS."""
    proxy = route.proxy
    return proxy.type is _SOCKS or proxy.tls or route.requires_tunnel or address.is_https


def attach(
    sock: socket.socket, route: Route, address: Address, http_proxy: bool, handshake_timeout: float
) -> Channel:
    """The channel for the handshakes over the connected ``sock``: the socket itself, its kernel timeouts at
    ``handshake_timeout`` when bytes go before the first request (SOCKS, a tunnel, TLS)."""
    if _has_handshake(route, address):
        set_socket_timeouts(sock, handshake_timeout)
    return sock


def raw_mode(sock: Channel, on: bool) -> None:
    """Nothing to switch on a socket: handshakes read it directly."""


def socks4a(sock: Channel, host: str, port: int, user_id: str, proxy_name: str, timeout: float) -> None:
    # SOCKS is the first handshake: ``sock`` is the plain socket ``attach`` returned
    socks4a_connect(sock, host, port, user_id=user_id, proxy_name=proxy_name)  # type: ignore[arg-type]


def socks5(
    sock: Channel,
    host: str,
    port: int,
    username: str | None,
    password: str | None,
    proxy_name: str,
    timeout: float,
) -> None:
    socks5_connect(  # SOCKS is the first handshake: the plain socket ``attach`` returned
        sock,  # type: ignore[arg-type]
        host,
        port,
        username=username,
        password=password,
        proxy_name=proxy_name,
    )


def start_tls(
    sock: Channel,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
    timeout: float,
) -> Channel:
    """TLS to ``host`` over the channel: the TLS socket (inside the TLS to a proxy when there is one)."""
    return wrap_tls(sock, host, port, context, sessions, user)


def tunnel(
    sock: Channel,
    route: Route,
    user_agent: str,
    proxy_authenticator: AuthenticatorLike | None,
    reconnect: Callable[[], Channel],
    timeout: float,
) -> Channel:
    """The CONNECT tunnel through the proxy: the socket, or a new one after a 407 that closed."""
    return open_tunnel(sock, route, user_agent, proxy_authenticator, reconnect)


def close_channel(sock: Channel) -> None:
    close_quietly(sock)  # idempotent: wrap_tls and open_tunnel already closed what they own


def new_connection(
    sock: Channel,
    route: Route,
    address: Address,
    http_proxy: bool,
    connect_timeout: float,
    handshake_timeout: float,
    tls_sessions: TlsSessions,
) -> RealConnection:
    """The ``RealConnection`` over the socket the handshakes ran on, told the kernel timeouts set so far
    and the TLS sessions its layers will give."""
    conn = RealConnection(sock, route, address, address.is_https, http_proxy)
    if not conn.is_tls:
        # the kernel timeouts set so far: the first set_timeouts() skips equal values
        if _has_handshake(route, address):
            conn.read_timeout = conn.write_timeout = handshake_timeout
        else:
            conn.write_timeout = connect_timeout  # SO_SNDTIMEO as connect_tcp left it (0: none)
    else:
        # the sessions this connection's TLS layers will give, innermost first (read on release)
        proxy = route.proxy
        keys: tuple[tuple[str, int], ...] = ((address.host, address.port),) if address.is_https else ()
        if proxy.type is ProxyType.HTTP and proxy.tls:
            keys += ((str(proxy.host), int(proxy.port or 0)),)
        if keys:
            conn.offer_tls_sessions(tls_sessions, keys)
    return conn


# -- map's workers (map_calls) -----------------------------------------------------------------------
# Threads. A worker blocked in a call cannot be interrupted, so stopping cancels the calls in flight (a
# blocked read or write fails at once) and joins the threads, 30 s in all: a worker blocked inside the
# input's own ``next()`` cannot be interrupted.

#: Serialises the workers taking the next item of the input.
Lock = threading.Lock
#: The token and result queues: ``put_nowait``, ``get()``, ``get_nowait`` (``QueueEmpty``).
Queue = queue.SimpleQueue
QueueEmpty = queue.Empty
#: Guards the few fields the workers and the consumer share.
StateLock = threading.Lock

_JOIN_SECONDS = 30.0  # how long stopping waits, in all, for the workers to end


def start_worker(work: Callable[[], None], name: str) -> threading.Thread:
    """Run ``work()`` on a new daemon thread (``RuntimeError`` when no thread is to be had)."""
    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    return worker


def stop_workers(workers: list[threading.Thread], calls: Sequence[RealCall]) -> None:
    """Stop the workers: cancel ``calls``, those in flight, and join the threads."""
    for call in calls:
        call.cancel()
    deadline = time.monotonic() + _JOIN_SECONDS
    for worker in workers:
        worker.join(timeout=max(0.0, deadline - time.monotonic()))


# -- the call (real_call): where it runs, its timeout, cancel from any thread, backoff, enqueue ------
# The call runs on the caller's thread; ``cancel()`` from any thread shuts its socket down (the call's
# own work) and wakes a backoff sleep; the call timeout is the process's watchdog thread, which gives up
# on a call whose deadline is no longer the one it was armed with (``end``/``fail`` set it to -1).


def call_failed(call: RealCall, exc: BaseException) -> BaseException:
    """The error the call fails with when ``exc`` ended ``execute()``: ``exc``."""
    return exc


def arm_call_timeout(call: RealCall, seconds: float) -> None:
    """Cancel the call as ``CallTimeout`` at its deadline (the watchdog)."""
    watchdog().watch(call)


def disarm_call_timeout(call: RealCall) -> None:
    """The call ended before its timeout: nothing to do (the watchdog reads the deadline)."""


def cancel_elsewhere(call: RealCall) -> bool:
    """``cancel()`` runs on any thread: False."""
    return False


def interrupt(call: RealCall) -> None:
    """``cancel()``: wake a backoff sleep."""
    wakeup = call.wakeup
    if wakeup is not None:
        wakeup.set()


def backoff_sleep(call: RealCall, seconds: float) -> None:
    """Wait ``seconds``: ``cancel()`` cuts it short (``interrupt``)."""
    wakeup = call.wakeup
    if wakeup is None:
        wakeup = call.wakeup = threading.Event()
    if not call.canceled:  # a cancel() before the event was there could not set it
        wakeup.wait(seconds)


#: What ``enqueue()`` returns: the future of the call's response.
CallFuture = Future


def run_in_background(call: RealCall, callback: Callback | None, stream: bool) -> Future[Response]:
    """Run ``call`` on its client's dispatcher: the future of its response, the body read unless
    ``stream``; ``callback``'s ``on_response``/``on_failure`` run on the dispatcher's thread before the
    future resolves."""
    # a blocking Client always has a dispatcher (None is the AsyncClient's, which never gets here)
    future: Future[Response] = call.client.dispatcher.enqueue(call, callback, stream)  # type: ignore[union-attr]
    return future
