"""Finding a connection for a request on the running asyncio loop: the pool first, else routes connected.

Theory of operation
-------------------
The asyncio twin of ``exchange_finder`` (``_sync/exchange_finder.py``, whose doc describes the rules),
with the same semantics step by step: ``find_connection`` takes the connection the call holds for a
same-address follow-up, else the pool's most recently used idle connection (never one whose transport
reported the peer's close: the loop read the FIN while the connection was idle, so the check costs no
system call; stray bytes are looked for when it was idle ``PROBE_IDLE_AFTER`` or longer), else, under
``max_connections_per_host``, waits for a slot in the ``AsyncConnectionPool`` (behind the calls already
waiting for that host), else asks an ``AsyncExchangeFinder``. The finder keeps the blocking finder's
attributes, route order, retry rule, events, connector bookkeeping, errors and messages
(``connect_failure``, ``dialed`` and the TLS, SOCKS and CONNECT steps are shared with the blocking code,
not copied). What is asynchronous:

* name resolution is awaited (``fastnet.dns.alookup``) between the route selector's ``next_target`` and
  ``routes_for``, with the ``dns_start``/``dns_end`` events the blocking selector sends;
* the TCP connects race as tasks (``async_happy_eyeballs``);
* the connection is an ``AsyncRealConnection`` attached to a transport as soon as its socket connected;
  SOCKS and CONNECT run over its raw mode, TLS is ``loop.start_tls`` (inside the TLS to an HTTPS proxy
  when there is one), each step bounded by the handshake timeout.

``cancel()`` (plain code on the loop's thread, as a call's ``cancel()`` is) aborts what is in flight at
once: a name lookup (each runs in a task of its own for that), the connect race's tasks, or the
connection being set up (its transport is aborted, so a pending handshake read or TLS handshake ends
now); the finder then raises ``CanceledError``. When the task
running ``find`` is cancelled (``task.cancel()``), everything it opened is closed and the host's slot is
given back before the ``CancelledError`` goes on.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from fastnet._internal._async.happy_eyeballs import Race, connect_tcp_async
from fastnet._internal._async.pool import AsyncConnectionPool
from fastnet._internal._async.real_connection import AsyncRealConnection, new_async_connection
from fastnet._internal._sync.exchange_finder import (
    PROBE_IDLE_AFTER,
    SelectorEvents,
    connect_failure,
    dialed,
    slot_deadline,
    socks_proxy_ip,
)
from fastnet._internal.connection.route_selector import RouteSelector, ips_of
from fastnet._internal.connection.socks import socks4a_connect_async, socks5_connect_async
from fastnet._internal.connection.tls import OFFERED_SESSION, wrap_tls_async
from fastnet._internal.connection.tunnel import open_tunnel_async
from fastnet._internal.util.clock import monotonic
from fastnet.dns import alookup
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

    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.connector import Connector
    from fastnet.request import Request
    from fastnet.route import Address, Route

__all__ = ["AsyncExchangeFinder", "find_connection"]

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
            return held  # type: ignore[return-value]  # an asyncio call holds asyncio connections
        user.release_connection()  # the next hop goes elsewhere (or the held one cannot be reused)
    pool = connector.pool
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
    while True:
        now = _monotonic()
        conn = pool.acquire(address, now)
        if conn is None:
            if limited:
                assert isinstance(pool, AsyncConnectionPool)
                if await pool.wait_for_slot_async(address, deadline, ticket):
                    continue  # a call released a connection to this address while we waited
            break
        if (
            conn.loop is loop  # type: ignore[attr-defined]
            and not conn.eof  # type: ignore[attr-defined]
            and (now - conn.idle_at < PROBE_IDLE_AFTER or conn.is_healthy())
        ):
            break
        pool.release(conn, False)  # closed by the peer while idle (a new one, not a retry), or another loop's
        if limited:
            deadline = slot_deadline(user, connect_timeout)  # a new wait, as the blocking finder's
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
    return conn  # type: ignore[return-value]


class AsyncExchangeFinder:
    """Routes for one address within one call hop, and the connection attempts over them, on asyncio."""

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
    # what cancel() aborts: a name lookup, the connect race, or the connection in its handshakes
    connecting: asyncio.Future[Any] | Race | AsyncRealConnection | None
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
        """``next(selector)`` with the lookup awaited; None where the blocking one raises StopIteration."""
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
        """Abort the lookup or connect in flight now (call it on the loop's thread); ``find`` raises
        CanceledError."""
        self.canceled = True
        connecting = self.connecting
        if isinstance(connecting, Race):
            connecting.abort()
        elif isinstance(connecting, AsyncRealConnection):
            connecting.shutdown()
        elif connecting is not None:
            connecting.cancel()  # a name lookup

    async def _lookup(self, host: str) -> Any:
        """The client's Dns answer for ``host``, in a task of its own so that ``cancel()`` can end it."""
        if self._is_canceled():
            raise CanceledError("Canceled", phase="dns")
        lookup = asyncio.ensure_future(alookup(self.connector.dns, host))
        self.connecting = lookup
        try:
            await asyncio.wait((lookup,))
        except BaseException:
            lookup.cancel()  # our task was cancelled: so is the lookup
            raise
        finally:
            self.connecting = None
        if lookup.cancelled():
            raise CanceledError("Canceled", phase="dns")
        return lookup.result()

    def _set_connecting(self, race: Race | None) -> None:
        self.connecting = race

    def _is_canceled(self) -> bool:
        return self.canceled or self.user.canceled

    async def find(self, connect_timeout: float, read_timeout: float) -> AsyncRealConnection:
        """A new connection, counted by the pool (the host's slot is reserved while connecting)."""
        pool = self.connector.pool
        host = self.address.host
        deadline = slot_deadline(self.user, connect_timeout)
        if not pool.try_reserve(host):
            if not isinstance(pool, AsyncConnectionPool):
                raise TypeError("max_connections_per_host under asyncio needs an AsyncConnectionPool")
            await pool.reserve_async(host, deadline)
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
        if proxy.type is ProxyType.SOCKS:
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
            if routes[0].proxy.type is ProxyType.SOCKS:
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
                    on_race=self._set_connecting,
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
            http_proxy = proxy.type is ProxyType.HTTP and not route.requires_tunnel
            try:
                conn = await self._attach(sock, route, http_proxy)
                conn = await self._establish(conn, route, connect_timeout, handshake_timeout)
            except NetworkError as exc:
                tcp_failed(route, exc)
                if isinstance(exc, (TlsVerificationError, CanceledError)):
                    raise
                continue
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
        raise connect_failure(self.address, attempts, selection_errors, self._target_of)

    async def _attach(self, sock: socket.socket, route: Route, http_proxy: bool) -> AsyncRealConnection:
        """An ``AsyncRealConnection`` whose transport owns the connected ``sock`` (closed on failure)."""
        loop = asyncio.get_running_loop()
        conn = new_async_connection(loop, route, self.address, http_proxy, sock)
        token = OFFERED_SESSION.set(conn.tls_offer)  # the transport's context keeps it (uvloop's handshakes)
        try:
            await loop.create_connection(lambda: conn.protocol, sock=sock)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, OSError) and not isinstance(exc, NetworkError):
                raise ConnectError(f"handshake with {route} failed: {exc}") from exc
            raise
        finally:
            OFFERED_SESSION.reset(token)
        if self._is_canceled():
            conn.close()
            raise CanceledError("Canceled", phase="connect")
        return conn

    async def _establish(
        self, conn: AsyncRealConnection, route: Route, connect_timeout: float, handshake_timeout: float
    ) -> AsyncRealConnection:
        """SOCKS handshake or CONNECT tunnel, then TLS to the origin. Closes the connection on failure."""
        connector = self.connector
        address = self.address
        proxy = route.proxy
        user = self.user
        self.connecting = conn
        try:
            if proxy.type is ProxyType.SOCKS:
                conn.raw_mode(True)
                target_host = route.socket_address[0] if not proxy.remote_dns else address.host
                try:
                    if proxy.socks_version == 4:
                        await socks4a_connect_async(
                            conn,
                            target_host,
                            address.port,
                            user_id=proxy.username or "",
                            proxy_name=str(proxy),
                            timeout=handshake_timeout,
                        )
                    else:
                        await socks5_connect_async(
                            conn,
                            target_host,
                            address.port,
                            username=proxy.username,
                            password=proxy.password,
                            proxy_name=str(proxy),
                            timeout=handshake_timeout,
                        )
                except ProxyError as exc:
                    exc.proxy = proxy  # the Proxy itself, not only its name
                    raise
            elif proxy.type is ProxyType.HTTP:
                if proxy.tls:
                    await wrap_tls_async(
                        conn,
                        str(proxy.host),
                        int(proxy.port or 0),
                        connector.tls_context(),
                        connector.tls_sessions,
                        user,
                        handshake_timeout,
                    )
                if route.requires_tunnel:
                    conn.raw_mode(True)
                    target = self._target_of(route)
                    conn = await open_tunnel_async(
                        conn,
                        route,
                        connector.user_agent,
                        connector.proxy_authenticator,
                        lambda: self._reconnect(route, target, connect_timeout, handshake_timeout),
                        handshake_timeout,
                    )
            if address.is_https:
                tls_started = monotonic()
                await wrap_tls_async(
                    conn,
                    address.host,
                    address.port,
                    address.ssl_context,
                    connector.tls_sessions,
                    user,
                    handshake_timeout,
                )
                self.tls_time = monotonic() - tls_started
            conn.raw_mode(False)
            if self._is_canceled():
                raise CanceledError("Canceled", phase="connect")
        except BaseException as exc:
            # the connection being set up (a reconnect after a 407 may have replaced the first one)
            current = self.connecting
            conn.close()
            if isinstance(current, AsyncRealConnection):
                current.close()
            if isinstance(exc, Exception) and not isinstance(exc, CanceledError) and self._is_canceled():
                raise CanceledError("Canceled", phase="connect") from exc  # cancel() ended the handshake
            if isinstance(exc, NetworkError):
                raise
            if isinstance(exc, TimeoutError):
                raise ConnectTimeout(f"handshake with {route} timed out", phase="connect") from exc
            if isinstance(exc, OSError):
                raise ConnectError(f"handshake with {route} failed: {exc}") from exc
            raise
        finally:
            self.connecting = None
        return conn

    async def _reconnect(
        self, route: Route, target: tuple[str, int], connect_timeout: float, handshake_timeout: float
    ) -> AsyncRealConnection:
        """A new connection to the route's proxy (TLS to it for ``Proxy.https``), after a 407 that closed;
        in raw mode, for the next CONNECT."""
        connector = self.connector
        self.connecting = None
        sock, _route, _failures = await connect_tcp_async(
            [route],
            connect_timeout=connect_timeout or None,
            happy_eyeballs=False,
            is_canceled=self._is_canceled,
            target_of=lambda r: target,
            local_address=self.connector.local_address,
            on_race=self._set_connecting,
        )
        conn = await self._attach(sock, route, False)
        self.connecting = conn
        proxy = route.proxy
        if proxy.tls:
            await wrap_tls_async(
                conn,
                str(proxy.host),
                int(proxy.port or 0),
                connector.tls_context(),
                connector.tls_sessions,
                self.user,
                handshake_timeout,
            )
        conn.raw_mode(True)
        return conn
