"""Finding a connection for a request: the pool first, else routes planned and connected one by one.

Theory of operation
-------------------
``find_connection`` is what every request runs: the Address of the request's URL (from the Connector's
cache); the connection the call already holds, when a follow-up goes to the same address; else the
most recently used idle connection for it, probed for a peer close (see below); and only on a miss an
``ExchangeFinder``. With ``max_connections_per_host`` a call waits for a
connection to that host to be released, at most its connect timeout (or what is left of its call
timeout, if that is less), then fails with ``PoolTimeout``.

The probe (``RealConnection.is_healthy``: one non-blocking ``MSG_PEEK`` receive) finds a connection the
server closed while it was idle (a FIN, a TLS close_notify), so the request goes out on a new connection
with no retry, no RouteDatabase entry and no replayed body. It is made when the connection was idle for
``PROBE_IDLE_AFTER`` (1 ms) or more, and always for a request with a body. A bodiless request that follows
the previous one on the connection within the millisecond (a keep-alive loop) makes no probe, which keeps
such a request at two system calls: a close racing it is a close during the request, which a probe made
a moment earlier would miss just as well, and the retry of a stale connection recovers it. OkHttp makes
the same kind of choice (``RealConnection.isHealthy``: no socket read for a connection idle under 10 s,
and only for non-GET requests after that); 1 ms keeps the unprobed window far below any "a moment
later" while a probe costs at most one receive per millisecond of idleness.

An ``ExchangeFinder`` lives for one call hop and one Address. It owns the ``RouteSelector``, so a retry
after a fresh connection failed its first exchange continues with the *next* route instead of starting
over. After a stale pooled connection failed, it tries that connection's route first, without asking the
proxy selector or DNS again. For each selection (one proxy's routes) the TCP connects race (RFC 8305,
``happy_eyeballs.py``); the winner is taken through the SOCKS handshake or the CONNECT tunnel and TLS, and
becomes a ``RealConnection`` counted by the pool. Every outcome is reported to the Connector (route
database, DNS hooks, proxy selector) and to the call's event listener. How the sockets are connected and
the handshakes driven is the I/O backend's (``_async/io.py``, ``_sync/io.py``); ``cancel()`` aborts what
is in flight there (a name lookup on asyncio, the connect race, a connecting socket, the connection in
its handshakes), and the finder then raises ``CanceledError``.

.. async-only
The asyncio source of ``_sync/exchange_finder.py`` (``scripts/unasync.py``), with the same semantics step
by step. What is asynchronous: name resolution is awaited (``fastnet.dns.alookup``) between the route
selector's ``next_target`` and ``routes_for``; the TCP connects race as tasks; the connection is an
``AsyncRealConnection`` attached to a transport as soon as its socket connected, SOCKS and CONNECT run over
its raw mode, TLS is ``loop.start_tls``, each step bounded by the handshake timeout. A pooled connection is
reused only on its own loop, never one whose transport reported the peer's close (the loop read the FIN
while it was idle, so the check costs no system call; stray bytes are looked for when it was idle
``PROBE_IDLE_AFTER`` or longer); a call waits for a host's slot in the ``AsyncConnectionPool`` behind the
calls already waiting for it. ``cancel()`` is plain code on the loop's thread, as a call's ``cancel()`` is.
When the task running ``find`` is cancelled (``task.cancel()``), everything it opened is closed and the
host's slot is given back before the ``CancelledError`` goes on.
.. end
.. sync-only
The blocking form, generated from ``_async/exchange_finder.py``; compiled in place, typed by its ``.pxd``,
in the compiled build.
.. end
"""

from __future__ import annotations

import asyncio  # async-only
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from fastnet._internal._async.happy_eyeballs import connect_tcp_async
from fastnet._internal._async.io import (
    abort,
    attach,
    close_channel,
    lookup_host,
    new_connection,
    raw_mode,
    socks4a,
    socks5,
    start_tls,
    tunnel,
)
from fastnet._internal._async.pool import AsyncConnectionPool  # async-only
from fastnet._internal._async.real_connection import AsyncRealConnection
from fastnet._internal.connection.route_selector import RouteSelector, ips_of
from fastnet._internal.util.clock import monotonic
from fastnet._internal.util.sockets import hostport
from fastnet.exceptions import (
    CanceledError,
    ConnectError,
    ConnectTimeout,
    NetworkError,
    ProxyError,
    RouteError,
    TlsVerificationError,
    UnknownHostError,
)
from fastnet.proxy import Proxy, ProxyType
from fastnet.route import is_ip_literal

if TYPE_CHECKING:
    import socket
    from collections.abc import Iterable

    from fastnet._internal._async.io import Channel, Connecting
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.connector import Connector
    from fastnet.events import EventListener
    from fastnet.request import Request
    from fastnet.route import Address, Route
    from fastnet.url import URL

__all__ = [
    "PROBE_IDLE_AFTER",
    "AsyncExchangeFinder",
    "SelectorEvents",
    "connect_failure",
    "connect_reason",
    "dialed",
    "find_connection",
    "slot_deadline",
    "socks_proxy_ip",
]

# the proxy types as module constants: ``ProxyType.X`` goes through the enum class's ``__getattr__`` hook
_DIRECT = ProxyType.DIRECT
_HTTP = ProxyType.HTTP
_SOCKS = ProxyType.SOCKS

#: A connection idle this long (seconds) is probed for a peer close before reuse (one MSG_PEEK recv);
#: a request with a body probes it whatever its idle time. See the module's docstring.
PROBE_IDLE_AFTER = 0.001
_monotonic = time.monotonic


async def find_connection(
    connector: Connector, user: ConnectionUser, request: Request, connect_timeout: float, read_timeout: float
) -> AsyncRealConnection:
    """A connection for ``request``: the one the call holds, a pooled one for its Address, else a new one.
    The call holds it afterwards (``connection_acquired`` when it was not held already)."""
    address = connector.address_of(request.url, request.proxy)
    held = user.connection
    if held is not None:
        if user.reusable and held.address == address and not held.no_new_exchanges:
            user.reusable = False  # in use again: not reusable until this exchange ends cleanly
            # sync-only: return held
            return held  # type: ignore[return-value]  # an asyncio call holds asyncio connections  # async-only
        user.release_connection()  # the next hop goes elsewhere (or the held one cannot be reused)
    pool = connector.pool
    # unasync: skip
    loop = asyncio.get_running_loop()
    limited = pool.max_per_host > 0
    deadline = 0.0
    ticket = 0  # the call's place among the waiters of the host, once it waited
    if limited:
        if not isinstance(pool, AsyncConnectionPool):
            raise TypeError("max_connections_per_host under asyncio needs an AsyncConnectionPool")
        deadline = slot_deadline(user, connect_timeout)
        if pool.must_queue(address.host):
            ticket = await pool.wait_turn(address.host, deadline)  # fair: behind the calls already waiting
    # unasync: skip end
    while True:
        now = _monotonic()
        conn = pool.acquire(address, now)
        if conn is None:
            # unasync: skip
            if limited:
                assert isinstance(pool, AsyncConnectionPool)
                if await pool.wait_for_slot_async(address, deadline, ticket):
                    continue  # a call released a connection to this address while we waited
            # unasync: skip end
            # sync-only: if pool.max_per_host > 0 and pool.wait_for_slot(
            # sync-only:     address, slot_deadline(user, connect_timeout)
            # sync-only: ):
            # sync-only:     continue  # a call released a connection to this address while we waited
            break
        # sync-only: if (now - conn.idle_at < PROBE_IDLE_AFTER and request.body is None) or conn.is_healthy():
        # sync-only:     break
        # sync-only: pool.release(conn, False)  # the peer closed it while it was idle: a new one, not a retry
        # unasync: skip
        if (
            conn.loop is loop  # type: ignore[attr-defined]
            and not conn.eof  # type: ignore[attr-defined]
            and (now - conn.idle_at < PROBE_IDLE_AFTER or conn.is_healthy())
        ):
            break
        pool.release(conn, False)  # closed by the peer while idle (a new one, not a retry), or another loop's
        if limited:
            deadline = slot_deadline(user, connect_timeout)  # a new wait, as the blocking finder's
        # unasync: skip end
    if conn is None:
        finder = user.finder
        if not isinstance(finder, AsyncExchangeFinder) or finder.address != address:
            finder = AsyncExchangeFinder(connector, user, address)
            user.finder = finder
        conn = await finder.find(connect_timeout, read_timeout)
    user.connection = conn
    user.reusable = False
    if user.canceled:
        conn.shutdown()
    if user.events is not None:
        user.events.connection_acquired(user, conn)
    # sync-only: return conn
    return conn  # type: ignore[return-value]  # async-only


class AsyncExchangeFinder:
    """Routes for one address within one call hop, and the connection attempts over them."""

    __slots__ = (
        "connector",
        "user",
        "address",
        "selector",
        "pending",
        "canceled",
        "connecting",
        "tried",
        "dns_time",
        "tls_time",
        "_proxy_ips",
    )
    connector: Connector
    user: ConnectionUser
    address: Address
    selector: RouteSelector | None  # made on first need: a retry on a known route skips selection
    pending: list[Route]  # routes of the current selection not tried yet
    canceled: bool
    # what cancel() aborts (io.abort): a name lookup, the connect race, a connecting socket, the connection
    # (or socket) in its handshakes
    connecting: Connecting
    tried: set[Route]  # routes this finder connected or failed to connect: never offered twice
    dns_time: float  # seconds spent selecting routes (resolving names), for response.timings
    tls_time: float  # seconds of the last origin TLS handshake
    _proxy_ips: dict[str, str]

    def __init__(self, connector: Connector, user: ConnectionUser, address: Address) -> None:
        self.connector = connector
        self.user = user
        self.address = address
        self.selector = None
        self.pending = []
        retry = user.retry_route
        if retry is not None:
            user.retry_route = None
            if retry.address == address:
                self.pending = [retry]  # a stale pooled connection failed: its route first, no new lookup
        self.canceled = False
        self.connecting = None
        self.tried = set()
        self.dns_time = 0.0
        self.tls_time = 0.0
        self._proxy_ips = {}

    def _selector(self) -> RouteSelector:
        selector = self.selector
        if selector is None:
            user = self.user
            connector = self.connector
            selector = self.selector = RouteSelector(
                self.address,
                connector.route_database,
                dns=connector.dns,
                fallback_to_direct=connector.fallback_to_direct,
                happy_eyeballs=connector.happy_eyeballs,
                events=SelectorEvents(user, user.events) if user.events is not None else None,
            )
        return selector

    async def _next_selection(self, selector: RouteSelector) -> list[Route] | None:
        """The selector's next selection, its names resolved with ``_lookup``; None when there is none."""
        user = self.user
        events = user.events
        dns = self.connector.dns
        while True:
            target = selector.next_target()
            if target is None:
                postponed = selector.take_postponed()
                return postponed if postponed else None
            proxy, host, port, resolve = target
            if resolve:
                if events is not None:
                    events.dns_start(user, host)
                ips = ips_of(await self._lookup(host), dns, host)
                if events is not None:
                    events.dns_end(user, host, list(ips))
            else:
                ips = [host]
            routes = selector.routes_for(proxy, port, ips)
            if routes:
                return routes

    async def has_more_routes(self) -> bool:
        """Whether a route this finder has not tried is left (a retry on a fresh connection's failure
        needs one). May resolve names, to find out."""
        if self.pending:
            return True
        selector = self._selector()
        while selector.has_next():
            try:
                selection = await self._next_selection(selector)
            except NetworkError:
                return False  # no route would come of it (DNS failure, a bad proxy): do not retry
            if selection is None:
                return False
            routes = [r for r in selection if r not in self.tried]
            if routes:
                self.pending = routes
                return True
        return False

    def cancel(self) -> None:
        """Abort the lookup, connect or handshake in flight now (on asyncio: on the loop's thread); ``find``
        raises CanceledError."""
        self.canceled = True
        abort(self.connecting)

    async def _lookup(self, host: str) -> Iterable[object]:
        """The client's Dns answer for ``host`` (on asyncio in a task of its own, which ``cancel()`` ends)."""
        if self._is_canceled():
            raise CanceledError("Canceled", phase="dns")
        return await lookup_host(self.connector.dns, host, self._set_connecting)

    def _set_connecting(self, connecting: Connecting) -> None:
        self.connecting = connecting
        # sync-only: if connecting is not None and self.canceled:
        # sync-only:     raise CanceledError("Canceled", phase="connect")

    def _is_canceled(self) -> bool:
        return self.canceled or self.user.canceled

    async def find(self, connect_timeout: float, read_timeout: float) -> AsyncRealConnection:
        """A new connection, counted by the pool (the host's slot is reserved while connecting)."""
        pool = self.connector.pool
        host = self.address.host
        deadline = slot_deadline(self.user, connect_timeout)
        # sync-only: pool.reserve(host, deadline)
        # unasync: skip
        if not pool.try_reserve(host):
            if not isinstance(pool, AsyncConnectionPool):
                raise TypeError("max_connections_per_host under asyncio needs an AsyncConnectionPool")
            await pool.reserve_async(host, deadline)
        # unasync: skip end
        try:
            conn = await self._connect(connect_timeout, read_timeout)
        except BaseException:
            pool.unreserve(host)
            raise
        pool.register(conn)
        return conn

    async def _proxy_ip(self, proxy: Proxy) -> str:
        """The IP to dial for a SOCKS proxy given by name (resolved once per finder, client's Dns)."""
        host = proxy.host
        assert host is not None
        if is_ip_literal(host):
            return host
        ip = self._proxy_ips.get(host)
        if ip is None:
            try:
                answer = await self._lookup(host)
            except UnknownHostError as exc:
                raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: {exc}", proxy=proxy) from exc
            ip = self._proxy_ips[host] = socks_proxy_ip(proxy, answer)
        return ip

    def _target_of(self, route: Route) -> tuple[str, int]:
        """Where the TCP connect for ``route`` goes: the proxy for SOCKS (its IP, resolved before the
        connect by ``_proxy_ip``), else the socket address."""
        proxy = route.proxy
        if proxy.type is _SOCKS:
            host = proxy.host
            assert host is not None
            ip = host if is_ip_literal(host) else self._proxy_ips[host]
            return (ip, proxy.port)  # type: ignore[return-value]
        return route.socket_address

    async def _connect(self, connect_timeout: float, read_timeout: float) -> AsyncRealConnection:
        connector = self.connector
        user = self.user
        events = user.events
        attempts: list[tuple[Route, BaseException]] = []
        selection_errors: list[NetworkError] = []

        def tcp_failed(route: Route, error: BaseException) -> None:
            attempts.append((route, error))
            if events is not None:
                events.connect_failed(user, route, error)
            connector.record_failure(route, error)

        def target_of(route: Route) -> tuple[str, int]:
            target = self._target_of(route)
            if events is not None:
                events.connect_start(user, route)
            return target

        while True:
            if self._is_canceled():
                raise CanceledError("Canceled", phase="connect")
            if not self.pending:
                selector = self._selector()
                if not selector.has_next():
                    break
                started = monotonic()
                try:
                    selection = await self._next_selection(selector)
                except (UnknownHostError, RouteError) as exc:
                    # one proxy (or the origin) could not be resolved: the next proxy may still work
                    exc._locate(None, "dns" if isinstance(exc, UnknownHostError) else "connect")
                    selection_errors.append(exc)
                    continue
                finally:
                    self.dns_time += monotonic() - started
                if selection is None:
                    break
                self.pending = selection
                if not self.pending:
                    continue
            routes = self.pending
            if routes[0].proxy.tls:
                # TLS to the proxy: its context is built before the proxy is dialled, so a CA file that
                # cannot be loaded is the call's error, not a failure of this route
                connector.tls_context()
            if routes[0].proxy.type is _SOCKS:
                try:
                    await self._proxy_ip(routes[0].proxy)
                except ProxyError as exc:
                    self.pending = []
                    for route in routes:
                        tcp_failed(route, exc)
                    continue
            connect_started = monotonic()
            try:
                sock, route, failures = await connect_tcp_async(
                    routes,
                    connect_timeout=connect_timeout or None,
                    happy_eyeballs=connector.happy_eyeballs,
                    is_canceled=self._is_canceled,
                    on_failure=tcp_failed,
                    target_of=target_of,
                    # a lambda, not the bound method: compiled, a typed object's cpdef method as a value
                    # would lose its self
                    on_overtaken=lambda route, error: connector.record_overtaken(route, error),
                    on_connecting=self._set_connecting,
                    describe=dialed,
                    local_address=connector.local_address,
                )
            except (ConnectError, ConnectTimeout) as exc:
                if not attempts:
                    attempts.extend(getattr(exc, "attempts", []) or [(routes[0], exc)])
                self.pending = []
                continue
            except CanceledError as exc:
                exc._locate(None, "connect")
                raise
            failed = {id(r) for r, _ in failures}
            self.pending = [r for r in routes if r is not route and id(r) not in failed]
            self.tried.add(route)
            self.tried.update(r for r, _ in failures)
            handshake_timeout = connect_timeout or read_timeout
            proxy = route.proxy
            http_proxy = proxy.type is _HTTP and not route.requires_tunnel
            try:
                channel = await self._attach(sock, route, http_proxy, handshake_timeout)
                channel = await self._establish(channel, route, connect_timeout, handshake_timeout)
            except NetworkError as exc:
                tcp_failed(route, exc)
                if isinstance(exc, (TlsVerificationError, CanceledError)):
                    raise
                continue
            conn = new_connection(
                channel,
                route,
                self.address,
                http_proxy,
                connect_timeout,
                handshake_timeout,
                connector.tls_sessions,
            )
            try:
                connector.record_success(route)
                if events is not None:
                    events.connect_end(user, route)
            except BaseException:
                conn.close()  # a failing Dns hook or listener must not leave the connection open
                raise
            conn.dns_time = self.dns_time
            conn.tls_time = self.tls_time
            conn.connect_time = max(0.0, monotonic() - connect_started - self.tls_time)
            conn.remote_address = self._target_of(route)
            if http_proxy and proxy.authorization is not None:
                conn.proxy_authorization = proxy.authorization
            return conn
        # a lambda, not the bound method: compiled, a typed object's cpdef method as a value loses its self
        raise connect_failure(self.address, attempts, selection_errors, lambda route: self._target_of(route))

    async def _attach(
        self, sock: socket.socket, route: Route, http_proxy: bool, handshake_timeout: float
    ) -> Channel:
        """The channel the handshakes run on over the connected ``sock`` (closed on failure)."""
        try:
            channel = await attach(sock, route, self.address, http_proxy, handshake_timeout)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, OSError) and not isinstance(exc, NetworkError):
                raise ConnectError(f"handshake with {route} failed: {exc}") from exc
            raise
        if self._is_canceled():
            close_channel(channel)
            raise CanceledError("Canceled", phase="connect")
        return channel

    async def _establish(
        self, channel: Channel, route: Route, connect_timeout: float, handshake_timeout: float
    ) -> Channel:
        """SOCKS handshake or CONNECT tunnel, then TLS to the origin, on ``channel``; the channel to make the
        connection of (a TLS socket, a tunnel's, on the blocking side). Closes it on failure."""
        connector = self.connector
        address = self.address
        proxy = route.proxy
        user = self.user
        self.connecting = channel
        try:
            if proxy.type is _SOCKS:
                raw_mode(channel, True)
                target_host = route.socket_address[0] if not proxy.remote_dns else address.host
                try:
                    if proxy.socks_version == 4:
                        await socks4a(
                            channel,
                            target_host,
                            address.port,
                            proxy.username or "",
                            str(proxy),
                            handshake_timeout,
                        )
                    else:
                        await socks5(
                            channel,
                            target_host,
                            address.port,
                            proxy.username,
                            proxy.password,
                            str(proxy),
                            handshake_timeout,
                        )
                except ProxyError as exc:
                    exc.proxy = proxy  # the Proxy itself, not only its name
                    raise
            elif proxy.type is _HTTP:
                if proxy.tls:
                    channel = await self._proxy_tls(channel, proxy, handshake_timeout)
                if route.requires_tunnel:
                    raw_mode(channel, True)
                    target = self._target_of(route)
                    channel = await tunnel(
                        channel,
                        route,
                        connector.user_agent,
                        connector.proxy_authenticator,
                        partial(self._reconnect, route, target, connect_timeout, handshake_timeout),
                        handshake_timeout,
                    )
            if address.is_https:
                tls_started = monotonic()
                channel = await start_tls(
                    channel,
                    address.host,
                    address.port,
                    address.ssl_context,
                    connector.tls_sessions,
                    user,
                    handshake_timeout,
                )
                self.tls_time = monotonic() - tls_started
            raw_mode(channel, False)
            if self._is_canceled():
                raise CanceledError("Canceled", phase="connect")
        except BaseException as exc:
            # the channel being set up (a reconnect after a 407 may have replaced the first one)
            current = self.connecting
            close_channel(channel)
            if current is not None and current is not channel:
                close_channel(current)
            if isinstance(exc, Exception) and not isinstance(exc, CanceledError) and self._is_canceled():
                raise CanceledError("Canceled", phase="connect") from exc  # cancel() ended the handshake
            if isinstance(exc, NetworkError):
                raise
            if isinstance(exc, (TimeoutError, BlockingIOError)):  # a kernel timeout is EAGAIN
                raise ConnectTimeout(f"handshake with {route} timed out", phase="connect") from exc
            if isinstance(exc, OSError):
                raise ConnectError(f"handshake with {route} failed: {exc}") from exc
            raise
        finally:
            self.connecting = None
        return channel

    async def _reconnect(
        self, route: Route, target: tuple[str, int], connect_timeout: float, handshake_timeout: float
    ) -> Channel:
        """A new channel to the route's proxy (TLS to it for ``Proxy.https``), after a 407 that closed; in
        raw mode, for the next CONNECT."""
        connector = self.connector
        self.connecting = None
        sock, _route, _failures = await connect_tcp_async(
            [route],
            connect_timeout=connect_timeout or None,
            happy_eyeballs=False,
            is_canceled=self._is_canceled,
            target_of=lambda r: target,
            local_address=connector.local_address,
            on_connecting=self._set_connecting,
        )
        channel = await self._attach(sock, route, False, handshake_timeout)
        self.connecting = channel
        proxy = route.proxy
        if proxy.tls:
            channel = await self._proxy_tls(channel, proxy, handshake_timeout)
        raw_mode(channel, True)
        return channel

    async def _proxy_tls(self, channel: Channel, proxy: Proxy, handshake_timeout: float) -> Channel:
        """TLS to an HTTPS proxy (``Proxy.https``) over ``channel``."""
        connector = self.connector
        return await start_tls(
            channel,
            str(proxy.host),
            int(proxy.port or 0),
            connector.tls_context(),
            connector.tls_sessions,
            self.user,
            handshake_timeout,
        )


def slot_deadline(user: ConnectionUser, connect_timeout: float) -> float:
    """How long a call may wait for a per-host connection slot: its connect timeout, or the rest of its
    call timeout when that ends sooner (0: no limit at all, only when neither is set)."""
    deadline = user.deadline
    if connect_timeout > 0:
        bound = _monotonic() + connect_timeout
        if deadline <= 0 or bound < deadline:
            return bound
    return deadline if deadline > 0 else 0.0


class SelectorEvents:
    """Gives the route selector ``events.x(args)`` calls that reach ``listener.x(call, args)``."""

    __slots__ = ("call", "listener")

    def __init__(self, call: ConnectionUser, listener: EventListener) -> None:
        self.call = call
        self.listener = listener

    def proxy_select_start(self, url: URL | None) -> None:
        self.listener.proxy_select_start(self.call, url)

    def proxy_select_end(self, url: URL | None, proxies: list[Proxy]) -> None:
        self.listener.proxy_select_end(self.call, url, proxies)

    def dns_start(self, host: str) -> None:
        self.listener.dns_start(self.call, host)

    def dns_end(self, host: str, ips: list[str]) -> None:
        self.listener.dns_end(self.call, host, ips)


def connect_failure(
    address: Address,
    attempts: list[tuple[Route, BaseException]],
    selection_errors: list[NetworkError],
    target_of: Callable[[Route], tuple[str, int]],
) -> NetworkError:
    """The error for a finder that ran out of routes to ``address``: the one failure as it was (a refused
    TCP connect as one sentence naming what was dialed, ``target_of(route)``), or a summary of every
    attempt. Shared by the blocking and the asyncio finder."""
    authority = address.url.authority
    if not attempts and selection_errors:
        return selection_errors[0]
    if len(attempts) == 1:
        route, error = attempts[0]
        if isinstance(error, NetworkError):
            if isinstance(error, ConnectError) and not error.attempts:
                error.attempts = list(attempts)
            return error  # a timeout, a handshake, proxy or TLS failure: it names its route
        failure = ConnectError(
            f"Failed to connect to {dialed(route, target_of(route))}: {connect_reason(error)}",
            attempts=attempts,
        )
        failure.__cause__ = error
        return failure
    cause = attempts[-1][1] if attempts else None
    if attempts and all(isinstance(e, ConnectTimeout) for _, e in attempts):
        message = f"connect to {authority} timed out"
        message += " [tried " + "; ".join(f"{r}: {e}" for r, e in attempts) + "]"
        timeout = ConnectTimeout(message, phase="connect")
        timeout.attempts = list(attempts)  # type: ignore[attr-defined]
        timeout.__cause__ = cause
        return timeout
    detail = f": all {len(attempts)} routes failed" if attempts else ": no route to try"
    error = ConnectError(f"Failed to connect to {authority}{detail}", attempts=attempts)
    error.__cause__ = cause
    return error


def socks_proxy_ip(proxy: Proxy, answer: Iterable[object]) -> str:
    """The IP to dial for a SOCKS proxy given by name: the first of the client's Dns answer."""
    first = next(iter(answer), None) if answer else None  # (a Dns may answer any iterable, or None)
    if first is None:
        raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: no addresses", proxy=proxy)
    return first if isinstance(first, str) else str(first[0] if isinstance(first, tuple) else first)


def dialed(route: Route, target: tuple[str, int]) -> str:
    """What a TCP connect for ``route`` dials, as a message names it: ``93.184.216.34:80``, or
    ``proxy 10.0.0.5:3128`` when it is a proxy (``at <ip>`` added when the proxy was given by name)."""
    proxy = route.proxy
    endpoint = hostport(target[0], target[1])
    if proxy.type is _DIRECT:
        return endpoint
    kind = "SOCKS proxy" if proxy.type is _SOCKS else ("HTTPS proxy" if proxy.tls else "proxy")
    name = hostport(str(proxy.host), int(proxy.port or 0))
    return f"{kind} {name}" if name == endpoint else f"{kind} {name} at {endpoint}"


def connect_reason(error: BaseException) -> str:
    """Why a connect failed, without the errno prefix: ``Connection refused``."""
    if isinstance(error, NetworkError):
        return error.message
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)
