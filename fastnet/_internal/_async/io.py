"""The asyncio engine's I/O backend: what waits, wakes and runs work concurrently on the event loop.

The engine modules in ``_async/`` are the source of the blocking ones in ``_sync/`` (``scripts/unasync.py``);
where the two really differ in *how* they wait or run things, the source calls this module, and the
blocking module it generates calls ``_sync/io.py``, which offers the same names (modulo the ``Async``
prefix and the method names unasync maps). Both files are written by hand; neither is generated. Each
section serves one engine module and says which.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Protocol

from fastnet._internal._async.real_connection import AsyncRealConnection, new_async_connection
from fastnet._internal.connection.socks import socks4a_connect_async, socks5_connect_async
from fastnet._internal.connection.tls import OFFERED_SESSION, wrap_tls_async
from fastnet._internal.connection.tunnel import open_tunnel_async
from fastnet._internal.util.sockets import connect_error
from fastnet.dns import alookup
from fastnet.exceptions import CanceledError
from fastnet.route import is_ip_literal

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterable, Sequence
    from typing import TypeAlias

    from fastnet._internal._async.happy_eyeballs import _Attempt
    from fastnet._internal._async.real_call import AsyncRealCall
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.tls import TlsSessions
    from fastnet.authenticator import AuthenticatorLike
    from fastnet.dns._base import DnsLike
    from fastnet.response import Response
    from fastnet.route import Address, Route

    #: What the handshakes run on: the connection attached to the socket's transport.
    Channel: TypeAlias = AsyncRealConnection
    #: What a finder's ``cancel()`` aborts: the connect race, the connection in its handshakes, a lookup.
    Connecting: TypeAlias = "AsyncRace | AsyncRealConnection | asyncio.Future[Iterable[object]] | None"
    #: A socket address as ``connect`` takes it: ``(host, port)``, or the longer IPv6 tuple.
    SockAddr: TypeAlias = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]

    class AsyncCallback(Protocol):
        """What ``call.enqueue(callback)`` reports to; each method may be a coroutine function."""

        def on_response(self, call: AsyncRealCall, response: Response) -> object: ...
        def on_failure(self, call: AsyncRealCall, error: BaseException) -> object: ...


__all__ = [
    "AsyncCallFuture",
    "AsyncLock",
    "AsyncQueue",
    "AsyncRace",
    "IN_FLIGHT",
    "QueueEmpty",
    "StateLock",
    "abort",
    "arm_call_timeout",
    "attach",
    "backoff_sleep",
    "call_failed",
    "cancel_elsewhere",
    "close_channel",
    "disarm_call_timeout",
    "interrupt",
    "lookup_host",
    "new_connection",
    "raw_mode",
    "run_in_background",
    "socks4a",
    "socks5",
    "start_tls",
    "start_worker",
    "stop_workers",
    "tunnel",
]

# -- connecting ------------------------------------------------------------------------------------------
# The TCP connect race of ``happy_eyeballs`` (attempts are tasks awaiting ``loop.sock_connect``), the name
# lookups and the handshakes of ``exchange_finder`` (SOCKS, CONNECT and TLS over an ``AsyncRealConnection``
# attached to a transport as soon as its socket connected: the "channel" the handshakes run on).

#: ``AsyncRace.start``'s answer for an attempt that is connecting (0: connected, else its errno).
IN_FLIGHT = -1
_INF = float("inf")


def _close_unless_connected(sock: socket.socket) -> Callable[[asyncio.Task[None]], None]:
    """A done callback for an attempt's task: close the socket unless it connected. It runs once the task
    has ended, when the loop no longer watches the socket (so its descriptor may be reused safely)."""

    def done(task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is not None:
            sock.close()

    return done


class AsyncRace:
    """The attempts of one ``connect_tcp_async`` in flight (``attempt.task`` each), so that a canceller can
    abort them: ``abort()`` (plain code on the loop's thread) cancels every attempt at once."""

    __slots__ = ("in_flight", "aborted", "is_canceled", "loop")

    def __init__(self, is_canceled: Callable[[], bool] | None) -> None:
        self.in_flight: list[_Attempt] = []  # in launch order
        self.aborted = False
        self.is_canceled = is_canceled
        self.loop = asyncio.get_running_loop()

    def abort(self) -> None:
        """Cancel every attempt now; the race raises ``CanceledError`` (call it on the loop's thread)."""
        self.aborted = True
        for attempt in self.in_flight:
            if attempt.task is not None:
                attempt.task.cancel()

    def check_canceled(self) -> None:
        if self.aborted or (self.is_canceled is not None and self.is_canceled()):
            raise CanceledError("Canceled while connecting", phase="connect")

    async def sockaddr_of(self, target: tuple[str, int]) -> tuple[int, SockAddr]:
        """The address family and sockaddr for ``target``; a host name (a proxy given by name) is resolved
        by the loop's resolver, off the loop's thread."""
        host = target[0]
        if ":" in host:
            return int(socket.AF_INET6), target
        if is_ip_literal(host):
            return int(socket.AF_INET), target
        infos = await self.loop.getaddrinfo(host, target[1], type=socket.SOCK_STREAM)
        family, _, _, _, sockaddr = infos[0]
        return family, sockaddr

    def start(self, attempt: _Attempt, sockaddr: SockAddr) -> int:
        """Start connecting ``attempt.sock`` (non-blocking) to ``sockaddr``: a task, always ``IN_FLIGHT``."""
        self.in_flight.append(attempt)
        loop = self.loop
        task = loop.create_task(loop.sock_connect(attempt.sock, sockaddr))
        task.add_done_callback(_close_unless_connected(attempt.sock))
        attempt.task = task
        return IN_FLIGHT

    async def wait(self, seconds: float) -> list[_Attempt]:
        """Wait up to ``seconds`` (inf: no limit) for an attempt to finish; the finished ones, in launch
        order. ``CanceledError`` when the race was aborted or the caller canceled meanwhile."""
        await asyncio.wait(
            [a.task for a in self.in_flight if a.task is not None],
            timeout=None if seconds == _INF else max(seconds, 0.0),
            return_when=asyncio.FIRST_COMPLETED,
        )
        self.check_canceled()
        return [a for a in self.in_flight if a.task is not None and a.task.done()]

    def outcome(self, attempt: _Attempt) -> BaseException | None:
        """None when the finished ``attempt`` connected, else why it failed (an errno's own ``OSError``)."""
        task = attempt.task  # a finished attempt has its task
        if task.cancelled():  # type: ignore[union-attr]
            raise asyncio.CancelledError()  # not our abort: someone cancelled the attempt
        error: BaseException | None = task.exception()  # type: ignore[union-attr]
        if isinstance(error, OSError) and error.errno:
            return connect_error(error.errno)  # the errno's own message, as the blocking race's
        return error

    def drop(self, attempt: _Attempt) -> None:
        """Forget a failed ``attempt`` (its task's done callback closed its socket)."""
        self.in_flight.remove(attempt)

    async def finish(self, attempts: list[_Attempt]) -> None:
        """Cancel ``attempts``, wait until each task has ended and close their sockets."""
        tasks = []
        for attempt in attempts:
            self.in_flight.remove(attempt)
            task = attempt.task
            if task is not None and not task.done():
                task.cancel()
                tasks.append(task)
        try:
            if tasks:
                await asyncio.wait(tasks)
        finally:
            for attempt in attempts:
                if attempt.task is None or attempt.task.done():
                    attempt.sock.close()  # (one still ending closes its socket itself, when it has ended)

    def close(self) -> None:
        """The race is over (nothing to release on asyncio)."""

    def won(self, sock: socket.socket, timeout: float | None) -> None:
        """Ready the winner's socket: ``TCP_NODELAY``; it stays non-blocking, for a transport."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def abort(connecting: Connecting) -> None:
    """Abort what a finder has in flight (on the loop's thread): the connect race, the connection in its
    handshakes (its transport is aborted, so a pending handshake read or TLS handshake ends now) or a name
    lookup (a task)."""
    if isinstance(connecting, AsyncRace):
        connecting.abort()
    elif isinstance(connecting, AsyncRealConnection):
        connecting.shutdown()
    elif connecting is not None:
        connecting.cancel()  # a name lookup


async def lookup_host(dns: DnsLike, host: str, on_lookup: Callable[[Connecting], None]) -> Iterable[object]:
    """The client's Dns answer for ``host``, in a task of its own handed to ``on_lookup`` (then None) so
    that ``abort()`` can end it; ``CanceledError`` when it did."""
    lookup = asyncio.ensure_future(alookup(dns, host))
    on_lookup(lookup)
    try:
        await asyncio.wait((lookup,))
    except BaseException:
        lookup.cancel()  # our task was cancelled: so is the lookup
        raise
    finally:
        on_lookup(None)
    if lookup.cancelled():
        raise CanceledError("Canceled", phase="dns")
    return lookup.result()


async def attach(
    sock: socket.socket, route: Route, address: Address, http_proxy: bool, handshake_timeout: float
) -> AsyncRealConnection:
    """The channel for the handshakes over the connected ``sock``: an ``AsyncRealConnection`` whose
    transport owns it (each handshake is bounded by its own timeout, not the socket's)."""
    loop = asyncio.get_running_loop()
    conn = new_async_connection(loop, route, address, http_proxy, sock)
    token = OFFERED_SESSION.set(conn.tls_offer)  # the transport's context keeps it (uvloop's handshakes)
    try:
        await loop.create_connection(lambda: conn.protocol, sock=sock)
    finally:
        OFFERED_SESSION.reset(token)
    return conn


def raw_mode(conn: AsyncRealConnection, on: bool) -> None:
    """Handshake bytes (SOCKS, CONNECT) are read raw, not parsed as responses, while ``on``."""
    conn.raw_mode(on)


async def socks4a(
    conn: AsyncRealConnection, host: str, port: int, user_id: str, proxy_name: str, timeout: float
) -> None:
    await socks4a_connect_async(conn, host, port, user_id=user_id, proxy_name=proxy_name, timeout=timeout)


async def socks5(
    conn: AsyncRealConnection,
    host: str,
    port: int,
    username: str | None,
    password: str | None,
    proxy_name: str,
    timeout: float,
) -> None:
    await socks5_connect_async(
        conn, host, port, username=username, password=password, proxy_name=proxy_name, timeout=timeout
    )


async def start_tls(
    conn: AsyncRealConnection,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
    timeout: float,
) -> AsyncRealConnection:
    """TLS to ``host`` over the channel (``loop.start_tls``, inside the TLS to a proxy when there is one)."""
    await wrap_tls_async(conn, host, port, context, sessions, user, timeout)
    return conn


async def tunnel(
    conn: AsyncRealConnection,
    route: Route,
    user_agent: str,
    proxy_authenticator: AuthenticatorLike | None,
    reconnect: Callable[[], Awaitable[AsyncRealConnection]],
    timeout: float,
) -> AsyncRealConnection:
    """The CONNECT tunnel through the proxy: the channel, or a new one after a 407 that closed."""
    return await open_tunnel_async(conn, route, user_agent, proxy_authenticator, reconnect, timeout)


def close_channel(conn: AsyncRealConnection) -> None:
    conn.close()


def new_connection(
    conn: AsyncRealConnection,
    route: Route,
    address: Address,
    http_proxy: bool,
    connect_timeout: float,
    handshake_timeout: float,
    tls_sessions: TlsSessions,
) -> AsyncRealConnection:
    """The connection of the channel the handshakes ran on: the channel itself."""
    return conn


# -- map's workers (map_calls) -----------------------------------------------------------------------
# Tasks on the running loop. The loop's one thread runs them a step at a time, so the state the workers
# share needs no lock between awaits (``StateLock`` is a no-op); stopping cancels the tasks, which
# cancels the calls they await.

#: Serialises the workers taking the next item of an input that is itself awaited.
AsyncLock = asyncio.Lock
#: The token and result queues: ``put_nowait``, ``await get()``, ``get_nowait`` (``QueueEmpty``).
AsyncQueue = asyncio.Queue
QueueEmpty = asyncio.QueueEmpty


class StateLock:
    """Guards the few fields the workers and the consumer share: nothing to guard on one thread."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


def start_worker(work: Callable[[], Coroutine[object, None, None]], name: str) -> asyncio.Task[None]:
    """Run ``work()`` as a task on the running loop."""
    return asyncio.get_running_loop().create_task(work(), name=name)


async def stop_workers(workers: list[asyncio.Task[None]], calls: Sequence[AsyncRealCall]) -> None:
    """Stop the workers: cancel their tasks (and with them the calls they await) and wait for them.
    ``calls`` are for the blocking side, whose threads cannot be interrupted."""
    for worker in workers:
        worker.cancel()
    if workers:
        await asyncio.gather(*workers, return_exceptions=True)


# -- the call (real_call): where it runs, its timeout, cancel from any thread, backoff, enqueue ------
# The call runs on the running loop; ``cancel()`` from another thread hops onto it, and interrupts the
# call by canceling the task awaiting ``execute()``; the call timeout is a timer on that loop.
# (``execute()`` remembers that loop, its thread and the task on ``# async-only`` lines of the source.)


def call_failed(call: AsyncRealCall, exc: BaseException) -> BaseException:
    """The error the call fails with when ``exc`` ended ``execute()``: the ``CancelledError`` of its own
    ``cancel()`` becomes ``CanceledError`` (the task's cancellation taken back: the caller's task is not
    left canceled); the caller's own cancellation stays."""
    call.task = None
    if call.interrupting and isinstance(exc, asyncio.CancelledError):
        call.interrupting = False
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        error = call.canceled_error(call.request)
        error.__cause__ = exc
        return error
    return exc


def arm_call_timeout(call: AsyncRealCall, seconds: float) -> None:
    """Cancel the call as ``CallTimeout`` in ``seconds`` (a timer on its loop)."""
    # execute() set the call's loop before it arms the timeout
    call.timer = call.loop.call_later(seconds, _time_out, call)  # type: ignore[union-attr]


def _time_out(call: AsyncRealCall) -> None:
    call.timer = None
    if not call.finished:
        call.timed_out = True
        call.cancel()


def disarm_call_timeout(call: AsyncRealCall) -> None:
    """The call ended before its timeout: stop the timer."""
    timer = call.timer
    if timer is not None:
        call.timer = None
        timer.cancel()


def cancel_elsewhere(call: AsyncRealCall) -> bool:
    """``cancel()`` off the loop's thread: schedule it onto the call's loop (True); else False."""
    loop = call.loop
    if loop is not None and threading.get_ident() != call.thread:
        if not loop.is_closed():
            loop.call_soon_threadsafe(call.cancel)
        return True
    return False


def interrupt(call: AsyncRealCall) -> None:
    """``cancel()``: while ``execute()`` runs, cancel the task awaiting it (no await outlives the call)."""
    task = call.task
    if task is not None and not task.done() and not call.interrupting:
        call.interrupting = True
        task.cancel()


async def backoff_sleep(call: AsyncRealCall, seconds: float) -> None:
    """Wait ``seconds``: ``cancel()`` cuts it short by canceling the task."""
    await asyncio.sleep(seconds)


#: What ``enqueue()`` returns: the task of the call's response.
AsyncCallFuture = asyncio.Task


def run_in_background(
    call: AsyncRealCall, callback: AsyncCallback | None, stream: bool
) -> asyncio.Task[Response]:
    """Run ``call`` as a task on the running loop: its response, the body read unless ``stream``;
    ``callback``'s ``on_response``/``on_failure`` (each may be a coroutine function) run before the task
    completes."""
    return asyncio.get_running_loop().create_task(_enqueued(call, callback, stream))


async def _enqueued(call: AsyncRealCall, callback: AsyncCallback | None, stream: bool) -> Response:
    try:
        response: Response = await call.run()
        if not stream:
            try:
                await response.aread()
            except BaseException:
                response.close()
                raise
    except Exception as exc:
        if callback is not None:
            result = callback.on_failure(call, exc)
            if asyncio.iscoroutine(result):
                await result
        raise
    if callback is not None:
        result = callback.on_response(call, response)
        if asyncio.iscoroutine(result):
            await result
    return response
