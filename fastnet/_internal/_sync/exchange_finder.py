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
``happy_eyeballs.py``);
the winner is taken through the SOCKS handshake or the CONNECT tunnel and TLS, and becomes a
``RealConnection`` counted by the pool. Every outcome is reported to the Connector (route database, DNS
hooks, proxy selector) and to the call's event listener.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from fastnet._internal._sync.happy_eyeballs import connect_one, connect_tcp
from fastnet._internal._sync.real_connection import RealConnection, set_socket_timeouts
from fastnet._internal.connection.route_selector import RouteSelector
from fastnet._internal.connection.socks import socks4a_connect, socks5_connect
from fastnet._internal.connection.tls import wrap_tls
from fastnet._internal.connection.tunnel import open_tunnel
from fastnet._internal.util.clock import monotonic
from fastnet._internal.util.sockets import close_quietly, hostport
from fastnet.dns import as_dns
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
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.connection.connector import Connector
    from fastnet.request import Request
    from fastnet.route import Address, Route

__all__ = [
    "PROBE_IDLE_AFTER",
    "ExchangeFinder",
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


def find_connection(
    connector: Connector, user: ConnectionUser, request: Request, connect_timeout: float, read_timeout: float
) -> RealConnection:
    """A connection for ``request``: the one the call holds, a pooled one for its Address, else a new one.
    The call holds it afterwards (``connection_acquired`` when it was not held already)."""
    address = connector.address_of(request.url, request.proxy)
    held = user.connection
    if held is not None:
        if user.reusable and held.address == address and not held.no_new_exchanges:
            user.reusable = False  # in use again: not reusable until this exchange ends cleanly
            return held
        user.release_connection()  # the next hop goes elsewhere (or the held one cannot be reused)
    pool = connector.pool
    while True:
        now = _monotonic()
        conn = pool.acquire(address, now)
        if conn is None:
            if pool.max_per_host > 0 and pool.wait_for_slot(address, slot_deadline(user, connect_timeout)):
                continue  # a call released a connection to this address while we waited
            break
        if (now - conn.idle_at < PROBE_IDLE_AFTER and request.body is None) or conn.is_healthy():
            break
        pool.release(conn, False)  # the peer closed it while it was idle: a new one, not a retry
    if conn is None:
        finder = user.finder
        if finder is None or finder.address != address:
            finder = ExchangeFinder(connector, user, address)
            user.finder = finder
        conn = finder.find(connect_timeout, read_timeout)
    user.connection = conn
    user.reusable = False
    if user.canceled:
        conn.shutdown()
    if user.events is not None:
        user.events.connection_acquired(user, conn)
    return conn


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

    def __init__(self, call: Any, listener: Any) -> None:
        self.call = call
        self.listener = listener

    def proxy_select_start(self, url: Any) -> None:
        self.listener.proxy_select_start(self.call, url)

    def proxy_select_end(self, url: Any, proxies: Any) -> None:
        self.listener.proxy_select_end(self.call, url, proxies)

    def dns_start(self, host: str) -> None:
        self.listener.dns_start(self.call, host)

    def dns_end(self, host: str, ips: Any) -> None:
        self.listener.dns_end(self.call, host, ips)


class ExchangeFinder:
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
    connecting: Any  # the socket being connected, so cancel() can abort the connect
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

    def has_more_routes(self) -> bool:
        """Whether a route this finder has not tried is left (a retry on a fresh connection's failure
        needs one). May resolve names, to find out."""
        if self.pending:
            return True
        selector = self._selector()
        while selector.has_next():
            try:
                routes = [r for r in next(selector) if r not in self.tried]
            except StopIteration:
                return False
            except NetworkError:
                return False  # no route would come of it (DNS failure, a bad proxy): do not retry
            if routes:
                self.pending = routes
                return True
        return False

    def cancel(self) -> None:
        self.canceled = True
        sock = self.connecting
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # aborts a blocking connect at once
            except OSError:
                # not connecting yet: closing makes the connect() about to start fail at once
                close_quietly(sock)

    def _set_connecting(self, sock: Any) -> None:
        self.connecting = sock
        if sock is not None and self.canceled:
            raise CanceledError("Canceled", phase="connect")

    def _is_canceled(self) -> bool:
        return self.canceled or self.user.canceled

    def find(self, connect_timeout: float, read_timeout: float) -> RealConnection:
        """A new connection, counted by the pool (the host's slot is reserved while connecting)."""
        pool = self.connector.pool
        host = self.address.host
        pool.reserve(host, slot_deadline(self.user, connect_timeout))
        try:
            conn = self._connect(connect_timeout, read_timeout)
        except BaseException:
            pool.unreserve(host)
            raise
        pool.register(conn)
        return conn

    def _proxy_ip(self, proxy: Proxy) -> str:
        """The IP to dial for a SOCKS proxy given by name (resolved once per finder, client's Dns)."""
        host = proxy.host
        assert host is not None
        if is_ip_literal(host):
            return host
        ip = self._proxy_ips.get(host)
        if ip is None:
            try:
                answer = as_dns(self.connector.dns).lookup(host)
            except UnknownHostError as exc:
                raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: {exc}", proxy=proxy) from exc
            ip = self._proxy_ips[host] = socks_proxy_ip(proxy, answer)
        return ip

    def _target_of(self, route: Route) -> tuple[str, int]:
        """Where the TCP connect for ``route`` goes: the proxy for SOCKS, else the socket address."""
        proxy = route.proxy
        if proxy.type is _SOCKS:
            return (self._proxy_ip(proxy), proxy.port)  # type: ignore[return-value]
        return route.socket_address

    def _connect(self, connect_timeout: float, read_timeout: float) -> RealConnection:
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
            if self.canceled or user.canceled:
                raise CanceledError("Canceled", phase="connect")
            if not self.pending:
                selector = self._selector()
                if not selector.has_next():
                    break
                started = monotonic()
                try:
                    self.pending = list(next(selector))
                except StopIteration:
                    break
                except (UnknownHostError, RouteError) as exc:
                    # one proxy (or the origin) could not be resolved: the next proxy may still work
                    exc._locate(None, "dns" if isinstance(exc, UnknownHostError) else "connect")
                    selection_errors.append(exc)
                    continue
                finally:
                    self.dns_time += monotonic() - started
                if not self.pending:
                    continue
            routes = self.pending
            if routes[0].proxy.tls:
                # TLS to the proxy: its context is built before the proxy is dialled, so a CA file that
                # cannot be loaded is the call's error, not a failure of this route
                connector.tls_context()
            if routes[0].proxy.type is _SOCKS:
                try:
                    self._proxy_ip(routes[0].proxy)
                except ProxyError as exc:
                    self.pending = []
                    for route in routes:
                        tcp_failed(route, exc)
                    continue
            connect_started = monotonic()
            try:
                if len(routes) == 1:  # what connect_tcp would do, without its keyword arguments
                    route = routes[0]
                    sock, route, failures = connect_one(
                        route,
                        target_of(route),
                        connect_timeout,
                        tcp_failed,
                        self._set_connecting,
                        dialed,
                        connector.local_address,
                    )
                else:
                    sock, route, failures = connect_tcp(
                        routes,
                        connect_timeout=connect_timeout or None,
                        happy_eyeballs=connector.happy_eyeballs,
                        is_canceled=self._is_canceled,
                        on_failure=tcp_failed,
                        target_of=target_of,
                        # a lambda, not the bound method: compiled, a typed object's cpdef method as a value
                        # would lose its self
                        on_overtaken=lambda route, error: connector.record_overtaken(route, error),
                        on_socket=self._set_connecting,
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
            try:
                handshake = _has_handshake(route, self.address)
                sock = self._establish(sock, route, connect_timeout, handshake_timeout, handshake)
            except NetworkError as exc:
                tcp_failed(route, exc)
                if isinstance(exc, (TlsVerificationError, CanceledError)):
                    raise
                continue
            connector.record_success(route)
            if events is not None:
                events.connect_end(user, route)
            proxy = route.proxy
            http_proxy = proxy.type is _HTTP and not route.requires_tunnel
            conn = RealConnection(sock, route, self.address, self.address.is_https, http_proxy)
            conn.dns_time = self.dns_time
            conn.tls_time = self.tls_time
            conn.connect_time = max(0.0, monotonic() - connect_started - self.tls_time)
            conn.remote_address = self._target_of(route)
            if not conn.is_tls:
                # the kernel timeouts set so far: the first set_timeouts() skips equal values
                if handshake:
                    conn.read_timeout = conn.write_timeout = handshake_timeout
                else:
                    conn.write_timeout = connect_timeout  # SO_SNDTIMEO as connect_tcp left it (0: none)
            if http_proxy and proxy.authorization is not None:
                conn.proxy_authorization = proxy.authorization
            if conn.is_tls:
                # the sessions this connection's TLS layers will give, innermost first (read on release)
                if self.address.is_https:
                    keys: tuple[tuple[str, int], ...] = ((self.address.host, self.address.port),)
                else:
                    keys = ()
                if proxy.type is _HTTP and proxy.tls:
                    keys += ((str(proxy.host), int(proxy.port or 0)),)
                if keys:
                    conn.offer_tls_sessions(connector.tls_sessions, keys)
            return conn
        # a lambda, not the bound method: compiled, a typed object's cpdef method as a value loses its self
        raise connect_failure(self.address, attempts, selection_errors, lambda route: self._target_of(route))

    def _establish(
        self, sock: Any, route: Route, connect_timeout: float, handshake_timeout: float, handshake: bool
    ) -> Any:
        """SOCKS handshake or CONNECT tunnel, then TLS to the origin. Closes the socket on failure."""
        connector = self.connector
        address = self.address
        proxy = route.proxy
        user = self.user
        try:
            if handshake:  # bytes go before the first request (SOCKS, a tunnel, TLS): time them out
                set_socket_timeouts(sock, handshake_timeout)
            if proxy.type is _SOCKS:
                target_host = route.socket_address[0] if not proxy.remote_dns else address.host
                try:
                    if proxy.socks_version == 4:
                        socks4a_connect(
                            sock,
                            target_host,
                            address.port,
                            user_id=proxy.username or "",
                            proxy_name=str(proxy),
                        )
                    else:
                        socks5_connect(
                            sock,
                            target_host,
                            address.port,
                            username=proxy.username,
                            password=proxy.password,
                            proxy_name=str(proxy),
                        )
                except ProxyError as exc:
                    exc.proxy = proxy  # the Proxy itself, not only its name
                    raise
            elif proxy.type is _HTTP:
                if proxy.tls:
                    sock = wrap_tls(
                        sock,
                        str(proxy.host),
                        int(proxy.port or 0),
                        connector.tls_context(),
                        connector.tls_sessions,
                        user,
                    )
                if route.requires_tunnel:
                    target = self._target_of(route)
                    sock = open_tunnel(
                        sock,
                        route,
                        connector.user_agent,
                        connector.proxy_authenticator,
                        partial(self._reconnect, route, target, connect_timeout, handshake_timeout),
                    )
            if address.is_https:
                tls_started = monotonic()
                sock = wrap_tls(
                    sock, address.host, address.port, address.ssl_context, connector.tls_sessions, user
                )
                self.tls_time = monotonic() - tls_started
        except BaseException as exc:
            close_quietly(sock)  # idempotent: wrap_tls and open_tunnel already closed what they own
            if isinstance(exc, NetworkError):
                raise
            if isinstance(exc, (BlockingIOError, socket.timeout)):
                raise ConnectTimeout(f"handshake with {route} timed out", phase="connect") from exc
            if isinstance(exc, OSError):
                raise ConnectError(f"handshake with {route} failed: {exc}") from exc
            raise
        return sock

    def _reconnect(
        self, route: Route, target: tuple[str, int], connect_timeout: float, handshake_timeout: float
    ) -> Any:
        """A new socket to the route's proxy (TLS to it for ``Proxy.https``), after a 407 that closed."""
        connector = self.connector
        sock, _route, _failures = connect_tcp(
            [route],
            connect_timeout=connect_timeout or None,
            happy_eyeballs=False,
            is_canceled=self._is_canceled,
            target_of=lambda r: target,
            local_address=self.connector.local_address,
        )
        try:
            set_socket_timeouts(sock, handshake_timeout)
        except OSError:
            sock.close()
            raise
        proxy = route.proxy
        if proxy.tls:
            sock = wrap_tls(
                sock,
                str(proxy.host),
                int(proxy.port or 0),
                connector.tls_context(),
                connector.tls_sessions,
                self.user,
            )
        return sock


def _has_handshake(route: Route, address: Address) -> bool:
    """Whether bytes are exchanged before the first request: SOCKS, TLS to a proxy, a CONNECT tunnel, TLS."""
    proxy = route.proxy
    return proxy.type is _SOCKS or proxy.tls or route.requires_tunnel or address.is_https


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


def socks_proxy_ip(proxy: Proxy, answer: Any) -> str:
    """The IP to dial for a SOCKS proxy given by name: the first of the client's Dns answer."""
    if not answer:
        raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: no addresses", proxy=proxy)
    first = answer[0]
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
