"""Opening new connections: Address, routes, TCP (Happy Eyeballs), SOCKS, CONNECT tunnels, TLS.

Theory of operation: the per-request path (``_core_py``) asks the ``Connector`` for an ``Address``
(cached per origin and proxy) and, when the pool has no idle connection for it, for a new connection.
The Connector keeps one ``ExchangeFinder`` per call hop: it owns the ``RouteSelector`` so that a retry
after a fresh connection failed its first exchange continues with the *next* route instead of starting
over. For each selection (one proxy's routes) the TCP connects race (RFC 8305); the winner is then
taken through the SOCKS handshake or CONNECT tunnel and TLS. Every failure is recorded in the
RouteDatabase (TCP, TLS and first-exchange failures alike: decisions.md row 2), reported to the
``Dns`` hooks (the IP blacklist) and, for proxies, to the proxy selector.

Nothing here is on the keep-alive path: it runs once per new connection.
"""

from __future__ import annotations

import base64
import socket
import ssl
import struct
from typing import Any

from fastnet._internal.happy_eyeballs import connect_tcp
from fastnet._internal.http1.parser import ResponseParser
from fastnet._internal.route_selector import Address, Route, RouteSelector
from fastnet._internal.socks import socks4a_connect, socks5_connect
from fastnet.exceptions import (
    CanceledError,
    ConnectError,
    ConnectTimeout,
    NetworkError,
    ProtocolError,
    ProxyError,
    TlsError,
    TlsVerificationError,
)
from fastnet.proxy import Proxy, ProxyType

__all__ = ["Connector", "ExchangeFinder", "MAX_TUNNEL_ATTEMPTS"]

MAX_TUNNEL_ATTEMPTS = 21


def _timeval(seconds: float) -> bytes:
    if seconds <= 0:
        return struct.pack("ll", 0, 0)
    whole = int(seconds)
    return struct.pack("ll", whole, max(1, int((seconds - whole) * 1_000_000)) if whole == 0 else
                       int((seconds - whole) * 1_000_000))


def _set_socket_timeouts(sock: socket.socket, seconds: float) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(seconds))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(seconds))


class _EventAdapter:
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


class Connector:
    """Route-affecting configuration of a client and the machinery to open connections with it."""

    def __init__(
        self,
        *,
        dns: Any,
        proxy: Proxy | None,
        proxy_selector: Any,
        route_database: Any,
        ssl_context: ssl.SSLContext,
        proxy_authenticator: Any,
        fallback_to_direct: bool,
        happy_eyeballs: bool,
        user_agent: str,
    ) -> None:
        self.dns = dns
        self.proxy = proxy
        self.proxy_selector = proxy_selector
        self.route_database = route_database
        self.ssl_context = ssl_context
        self.proxy_authenticator = proxy_authenticator
        self.fallback_to_direct = fallback_to_direct
        self.happy_eyeballs = happy_eyeballs
        self.user_agent = user_agent
        self.tls_sessions: dict[tuple[str, int], Any] = {}

    def address_for(self, url: Any, proxy: Proxy | None) -> Address:
        explicit = proxy if proxy is not None else self.proxy
        https = url.scheme == "https"
        return Address(
            url.scheme,
            url.host,
            url.port,
            proxy=explicit,
            proxy_selector=None if explicit is not None else self.proxy_selector,
            dns=self.dns,
            ssl_context=self.ssl_context if https else None,
            proxy_authenticator=self.proxy_authenticator,
        )

    def connect(self, core: Any, call: Any, address: Address, chain: Any) -> Any:
        finder = call.finder
        if finder is None or finder.address != address:
            finder = call.finder = ExchangeFinder(self, call, address)
        return finder.find(core, chain)

    # -- failure bookkeeping ----------------------------------------------------------------------

    def route_failed(self, call: Any, conn: Any, error: BaseException) -> None:
        """A fresh connection failed its first exchange: remember its route (seed 000, decisions row 2)."""
        self.record_failure(call, conn.route, error)

    def record_failure(self, call: Any, route: Route, error: BaseException) -> None:
        if isinstance(error, CanceledError):
            return
        self.route_database.failed(route)
        proxy = route.proxy
        if proxy.type is ProxyType.DIRECT or (proxy.type is ProxyType.SOCKS and not proxy.remote_dns):
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(route.address.host, route.socket_address[0], error)
        elif proxy.type is ProxyType.HTTP:
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(proxy.host, route.socket_address[0], error)
        selector = route.address.proxy_selector
        if proxy.type is not ProxyType.DIRECT and selector is not None:
            notify = getattr(selector, "connect_failed", None)
            if notify is not None:
                try:
                    notify(route.address.url, (proxy.host, proxy.port), error)
                except Exception:  # noqa: BLE001 - a selector's bookkeeping must not break the call
                    pass

    def record_success(self, route: Route) -> None:
        self.route_database.connected(route)
        proxy = route.proxy
        hook = getattr(self.dns, "connected", None)
        if hook is None:
            return
        if proxy.type is ProxyType.DIRECT or (proxy.type is ProxyType.SOCKS and not proxy.remote_dns):
            hook(route.address.host, route.socket_address[0])
        elif proxy.type is ProxyType.HTTP:
            hook(proxy.host, route.socket_address[0])

    # -- TLS ----------------------------------------------------------------------------------------

    def wrap_tls(self, sock: Any, host: str, port: int, context: ssl.SSLContext, call: Any) -> Any:
        events = call.events
        if events is not None:
            events.secure_connect_start(call)
        session = self.tls_sessions.get((host, port))
        server_hostname = host if context.check_hostname or not _is_ip(host) else None
        try:
            tls = context.wrap_socket(sock, server_hostname=server_hostname or host, session=session)
        except ssl.SSLCertVerificationError as exc:
            raise TlsVerificationError(f"certificate verification failed for {host}: {exc.verify_message}",
                                       phase="tls") from exc
        except ssl.CertificateError as exc:
            raise TlsVerificationError(f"hostname {host} not verified: {exc}", phase="tls") from exc
        except ssl.SSLError as exc:
            raise TlsError(f"TLS handshake with {host}:{port} failed: {exc}", phase="tls") from exc
        except (BlockingIOError, socket.timeout) as exc:
            raise ConnectTimeout(f"TLS handshake with {host}:{port} timed out", phase="tls") from exc
        except OSError as exc:
            raise TlsError(f"TLS handshake with {host}:{port} failed: {exc}", phase="tls") from exc
        if tls.session is not None:
            if len(self.tls_sessions) > 1024:
                self.tls_sessions.clear()
            self.tls_sessions[(host, port)] = tls.session
        if events is not None:
            events.secure_connect_end(call, tls.version())
        return tls

    # -- CONNECT tunnels --------------------------------------------------------------------------

    def tunnel_request(self, address: Address) -> Any:
        from fastnet._internal.core import Headers, Request

        authority = address.url.authority
        return Request(
            "CONNECT",
            address.url,
            headers=Headers(
                [("Host", authority), ("Proxy-Connection", "Keep-Alive"), ("User-Agent", self.user_agent)]
            ),
        )

    def preemptive_tunnel_request(self, route: Route, request: Any) -> Any:
        """Proxy credentials before the first CONNECT: from the proxy itself, else the authenticator
        asked with a synthetic 407 (reference §8.2)."""
        from fastnet._internal.core import Response

        proxy = route.proxy
        if proxy.authorization is not None:
            return request.replace(headers=request.headers.set("Proxy-Authorization", proxy.authorization))
        authenticator = self.proxy_authenticator
        if authenticator is None:
            return request
        synthetic = Response(
            407,
            headers=[("Proxy-Authenticate", "fastnet-preemptive")],
            request=request,
            reason="Preemptive Authenticate",
        )
        answer = _authenticate(authenticator, route, synthetic)
        return answer if answer is not None else request

    def open_tunnel(self, sock: Any, route: Route, call: Any, chain: Any, target: tuple[str, int]) -> Any:
        """Send CONNECT until the proxy answers 200 (at most MAX_TUNNEL_ATTEMPTS requests in all)."""
        from fastnet._internal.core import Response

        proxy = route.proxy
        request = self.preemptive_tunnel_request(route, self.tunnel_request(route.address))
        for attempt in range(1, MAX_TUNNEL_ATTEMPTS + 1):
            head = b"CONNECT %s HTTP/1.1\r\n%s\r\n" % (
                route.address.url.authority.encode("ascii"),
                request.headers.to_wire(),
            )
            status, reason, headers, close = _exchange_connect(sock, head, proxy)
            if status == 200:
                return sock
            if status != 407:
                sock.close()
                raise ProxyError(f"Unexpected response code for CONNECT: {status} {reason} from proxy {proxy}",
                                 proxy=proxy, status_code=status)
            if attempt == MAX_TUNNEL_ATTEMPTS:
                break
            challenge = Response(407, headers=headers, request=request, reason=reason)
            answer = None
            if self.proxy_authenticator is not None:
                answer = _authenticate(self.proxy_authenticator, route, challenge)
            if answer is None:
                sock.close()
                sent = request.headers.get("Proxy-Authorization") is not None
                raise ProxyError(
                    f"Failed to authenticate with proxy {proxy}: 407 {reason}"
                    + (" (the credentials sent were rejected)" if sent else " (no credentials were given)"),
                    proxy=proxy,
                    status_code=407,
                )
            request = answer
            if close:
                sock.close()
                sock = self.reconnect(route, chain, call, target)
        sock.close()
        raise ProxyError(f"Too many tunnel connections attempted: {MAX_TUNNEL_ATTEMPTS} (proxy {proxy})",
                         proxy=proxy, status_code=407)

    def reconnect(self, route: Route, chain: Any, call: Any, target: tuple[str, int]) -> Any:
        sock, _route, _failures = connect_tcp(
            [route],
            connect_timeout=chain.connect_timeout or None,
            happy_eyeballs=False,
            is_canceled=lambda: call.canceled,
            target_of=lambda r: target,
        )
        _set_socket_timeouts(sock, chain.read_timeout or chain.connect_timeout)
        return sock


def _authenticate(authenticator: Any, route: Any, response: Any) -> Any:
    method = getattr(authenticator, "authenticate", None)
    if method is None:
        return authenticator(route, response)
    return method(route, response)


def _is_ip(host: str) -> bool:
    if ":" in host:
        return True
    parts = host.split(".")
    return len(parts) == 4 and all(p.isdigit() for p in parts)


def _exchange_connect(sock: Any, head: bytes, proxy: Any) -> tuple[int, str, list, bool]:
    """Write one CONNECT and read the proxy's answer: (status, reason, headers, must_close)."""
    parser = ResponseParser()
    try:
        sock.sendall(head)
        while True:
            parsed = parser.read_head(False)
            if parsed is not None:
                status = parsed[0]
                if status < 200:
                    continue
                break
            data = sock.recv(65536)
            if not data:
                raise ProxyError(f"proxy {proxy} closed the connection during CONNECT", proxy=proxy)
            parser.feed(data)
    except ProtocolError as exc:
        raise ProxyError(f"proxy {proxy} sent a malformed answer to CONNECT: {exc}", proxy=proxy) from exc
    except (BlockingIOError, socket.timeout) as exc:
        raise ProxyError(f"proxy {proxy} did not answer CONNECT in time", proxy=proxy) from exc
    except ProxyError:
        raise
    except OSError as exc:
        raise ProxyError(f"proxy {proxy} failed during CONNECT: {exc}", proxy=proxy) from exc
    status, reason, _version, headers, body_mode, length, keep_alive, _enc = parsed
    lowered = {n.lower(): v.lower() for n, v in headers}
    close = (not keep_alive and status != 200) or "close" in lowered.get("proxy-connection", "")
    if status == 200:
        if parser.take_buffered():
            raise ProxyError(f"proxy {proxy}: TLS tunnel buffered too many bytes", proxy=proxy)
        return status, reason, headers, close
    # skip a 407's body when it has a length, so the next CONNECT can use the same socket
    if body_mode == 1 and length > 0 and not close:
        try:
            while True:
                data = parser.read_body()
                if data is None:
                    break
                if not data:
                    more = sock.recv(65536)
                    parser.feed(more)
                    if not more:
                        close = True
                        break
        except (OSError, ProtocolError):
            close = True
    elif body_mode in (2, 3):
        close = True
    return status, reason, headers, close


class ExchangeFinder:
    """Routes for one address within one call hop, and the connection attempts over them."""

    def __init__(self, connector: Connector, call: Any, address: Address) -> None:
        self.connector = connector
        self.call = call
        self.address = address
        events = None
        if call.events is not None:
            events = _EventAdapter(call, call.events)
        self.selector = RouteSelector(
            address,
            connector.route_database,
            dns=connector.dns,
            fallback_to_direct=connector.fallback_to_direct,
            happy_eyeballs=connector.happy_eyeballs,
            events=events,
        )
        self.pending: list[Route] = []
        self.canceled = False

    def has_more_routes(self) -> bool:
        return bool(self.pending) or self.selector.has_next()

    def cancel(self) -> None:
        self.canceled = True

    def _is_canceled(self) -> bool:
        return self.canceled or self.call.canceled

    def find(self, core: Any, chain: Any) -> Any:
        pool = core.pool
        host = self.address.host
        pool.reserve(host, self.call.deadline if self.call.deadline > 0 else 0.0)
        try:
            conn = self._connect(core, chain)
        except BaseException:
            pool.unreserve(host)
            raise
        pool.register(conn)
        return conn

    def _target_of(self, route: Route) -> tuple[str, int]:
        proxy = route.proxy
        if proxy.type is ProxyType.SOCKS:
            host = proxy.host
            if not _is_ip(host):
                from fastnet.dns import as_dns

                host = as_dns(self.connector.dns).lookup(host)[0]
            return (host, proxy.port)
        return route.socket_address

    def _connect(self, core: Any, chain: Any) -> Any:
        from fastnet._internal.core import RealConnection

        connector = self.connector
        call = self.call
        events = call.events
        attempts: list[tuple[Route, BaseException]] = []
        url = self.address.url

        def tcp_failed(route: Route, error: BaseException) -> None:
            attempts.append((route, error))
            if events is not None:
                events.connect_failed(call, route, error)
            connector.record_failure(call, route, error)

        while True:
            if self._is_canceled():
                raise CanceledError("Canceled", url=url, phase="connect")
            if not self.pending:
                if not self.selector.has_next():
                    break
                self.pending = list(next(self.selector))
                if not self.pending:
                    continue
            routes = self.pending
            if events is not None:
                for route in routes[:1]:
                    events.connect_start(call, route)
            try:
                sock, route, failures = connect_tcp(
                    routes,
                    connect_timeout=chain.connect_timeout or None,
                    happy_eyeballs=connector.happy_eyeballs,
                    is_canceled=self._is_canceled,
                    on_failure=tcp_failed,
                    target_of=self._target_of,
                )
            except (ConnectError, ConnectTimeout) as exc:
                if not attempts:
                    attempts.extend(getattr(exc, "attempts", []) or [(routes[0], exc)])
                self.pending = []
                continue
            except CanceledError as exc:
                raise exc._locate(url, "connect")
            failed = {id(r) for r, _ in failures}
            self.pending = [r for r in routes if r is not route and id(r) not in failed]
            try:
                sock = self._establish(sock, route, call, chain)
            except NetworkError as exc:
                try:
                    sock.close()
                except OSError:
                    pass
                tcp_failed(route, exc)
                if isinstance(exc, (TlsVerificationError, CanceledError)):
                    raise exc._locate(url, exc.phase)
                continue
            connector.record_success(route)
            if events is not None:
                events.connect_end(call, route)
            proxy = route.proxy
            http_proxy = proxy.type is ProxyType.HTTP and not route.requires_tunnel
            conn = RealConnection(sock, route, self.address, self.address.is_https, http_proxy)
            if http_proxy and proxy.authorization is not None:
                conn.proxy_authorization = proxy.authorization
            return conn
        if len(attempts) == 1:
            error = attempts[0][1]
            if isinstance(error, NetworkError) and not isinstance(error, ConnectError):
                raise error._locate(url, error.phase)
        if attempts and all(isinstance(e, ConnectTimeout) for _, e in attempts):
            raise ConnectTimeout(f"connect to {self.address.host} timed out", url=url, phase="connect")
        detail = f": {attempts[-1][1]}" if attempts else ""
        raise ConnectError(f"Failed to connect to {self.address.url.authority}{detail}", url=url,
                           attempts=attempts)

    def _establish(self, sock: Any, route: Route, call: Any, chain: Any) -> Any:
        """SOCKS handshake or CONNECT tunnel, then TLS to the origin."""
        connector = self.connector
        address = self.address
        proxy = route.proxy
        handshake_timeout = chain.connect_timeout or chain.read_timeout
        _set_socket_timeouts(sock, handshake_timeout)
        try:
            if proxy.type is ProxyType.SOCKS:
                target_host = route.socket_address[0] if not proxy.remote_dns else address.host
                if proxy.socks_version == 4:
                    socks4a_connect(sock, target_host, address.port, user_id=proxy.username or "",
                                    proxy_name=str(proxy))
                else:
                    socks5_connect(sock, target_host, address.port, username=proxy.username,
                                   password=proxy.password, proxy_name=str(proxy))
            elif proxy.type is ProxyType.HTTP:
                if proxy.tls:
                    sock = connector.wrap_tls(sock, proxy.host, proxy.port, connector.ssl_context, call)
                if route.requires_tunnel:
                    if proxy.tls:
                        raise ProxyError(
                            f"HTTPS through the TLS proxy {proxy} needs TLS inside TLS, which is not supported; "
                            "use Proxy.http for the proxy",
                            proxy=proxy,
                        )
                    sock = connector.open_tunnel(sock, route, call, chain, self._target_of(route))
            if address.is_https:
                sock = connector.wrap_tls(sock, address.host, address.port, address.ssl_context, call)
        except NetworkError as exc:
            raise exc._locate(address.url, exc.phase)
        except (BlockingIOError, socket.timeout) as exc:
            raise ConnectTimeout(f"handshake with {route} timed out", url=address.url, phase="connect") from exc
        except OSError as exc:
            raise ConnectError(f"handshake with {route} failed: {exc}", url=address.url) from exc
        return sock
