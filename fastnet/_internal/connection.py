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

import socket
import ssl
import struct
from typing import Any

from fastnet._internal.happy_eyeballs import connect_tcp
from fastnet._internal.http1.parser import ResponseParser
from fastnet._internal.route_selector import Address, Route, RouteSelector, is_ip_literal
from fastnet._internal.socks import socks4a_connect, socks5_connect
from fastnet.exceptions import (
    CanceledError,
    ConnectError,
    ConnectTimeout,
    NetworkError,
    ProtocolError,
    ProxyError,
    RouteError,
    TlsError,
    TlsVerificationError,
    UnknownHostError,
)
from fastnet.proxy import Proxy, ProxyType

__all__ = ["Connector", "ExchangeFinder", "MAX_TUNNEL_ATTEMPTS", "TlsInTlsSocket"]

MAX_TUNNEL_ATTEMPTS = 21


def _timeval(seconds: float) -> bytes:
    if seconds <= 0:
        return struct.pack("ll", 0, 0)
    whole = int(seconds)
    return struct.pack(
        "ll",
        whole,
        max(1, int((seconds - whole) * 1_000_000)) if whole == 0 else int((seconds - whole) * 1_000_000),
    )


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

    def record_overtaken(self, route: Route, error: BaseException) -> None:
        """An attempt that a later one overtook (Happy Eyeballs): a slow or black-holed address. Only the
        Dns hears of it (the IP blacklist counts it); the route itself did not fail."""
        if route.proxy.type is ProxyType.DIRECT:
            hook = getattr(self.dns, "connect_failed", None)
            if hook is not None:
                hook(route.address.host, route.socket_address[0], error)

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
        """TLS to ``host`` over ``sock``: a plain socket, or a TLS socket to an HTTPS proxy (TLS inside TLS).

        On failure ``sock`` is closed (``ssl`` closes a socket whose handshake failed; the TLS-in-TLS
        path does the same), so the caller never holds a half-made connection.
        """
        events = call.events
        if events is not None:
            events.secure_connect_start(call)
        session = self.tls_sessions.get((host, port))
        nested = isinstance(sock, (ssl.SSLSocket, TlsInTlsSocket))
        try:
            if nested:
                tls: Any = TlsInTlsSocket(sock, context, host, session)
            else:
                # CPython's ssl retries a handshake read interrupted by SO_RCVTIMEO forever, so the
                # handshake runs under the socket's own timeout; afterwards the socket is blocking again
                # and the kernel timeouts (already set) bound every read and write.
                received = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)
                seconds, micros = struct.unpack("ll", received)
                limit = seconds + micros / 1e6
                sock.settimeout(limit if limit > 0 else None)
                tls = context.wrap_socket(sock, server_hostname=host, session=session)
                tls.settimeout(None)
        except ssl.SSLCertVerificationError as exc:
            _close_quietly(sock)
            raise TlsVerificationError(
                f"certificate verification failed for {host}: {exc.verify_message}", phase="tls"
            ) from exc
        except ssl.CertificateError as exc:
            _close_quietly(sock)
            raise TlsVerificationError(f"hostname {host} not verified: {exc}", phase="tls") from exc
        except ssl.SSLWantReadError as exc:  # SO_RCVTIMEO expired under the outer TLS socket
            _close_quietly(sock)
            where = _hostport(host, port)
            raise ConnectTimeout(f"TLS handshake with {where} timed out", phase="tls") from exc
        except ssl.SSLError as exc:
            _close_quietly(sock)
            raise TlsError(f"TLS handshake with {_hostport(host, port)} failed: {exc}", phase="tls") from exc
        except (TimeoutError, BlockingIOError) as exc:
            _close_quietly(sock)
            where = _hostport(host, port)
            raise ConnectTimeout(f"TLS handshake with {where} timed out", phase="tls") from exc
        except OSError as exc:
            _close_quietly(sock)
            raise TlsError(f"TLS handshake with {_hostport(host, port)} failed: {exc}", phase="tls") from exc
        if tls.session is not None:
            if len(self.tls_sessions) > 1024:
                self.tls_sessions.clear()
            self.tls_sessions[(host, port)] = tls.session
        if events is not None:
            events.secure_connect_end(call, tls.version())
        return tls

    # -- CONNECT tunnels --------------------------------------------------------------------------

    def tunnel_request(self, address: Address) -> Any:
        """The CONNECT request: only Host, Proxy-Connection and User-Agent (nothing of the user's)."""
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
        from fastnet.authenticator import PREEMPTIVE_SCHEME

        proxy = route.proxy
        if proxy.authorization is not None:
            return request.replace(headers=request.headers.set("Proxy-Authorization", proxy.authorization))
        authenticator = self.proxy_authenticator
        if authenticator is None:
            return request
        synthetic = Response(
            407,
            headers=[("Proxy-Authenticate", PREEMPTIVE_SCHEME)],
            request=request,
            reason="Preemptive Authenticate",
        )
        answer = _authenticate(authenticator, route, synthetic, proxy)
        return answer if answer is not None else request

    def open_tunnel(self, sock: Any, route: Route, call: Any, chain: Any, target: tuple[str, int]) -> Any:
        """Send CONNECT until the proxy answers 200 (at most MAX_TUNNEL_ATTEMPTS requests in all).

        Returns the tunnelled socket, which is ``sock`` or, after a 407 that closed the connection, a
        new socket to the same proxy. On failure every socket opened here is closed.
        """
        from fastnet._internal.core import Response

        proxy = route.proxy
        try:
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
                    raise ProxyError(
                        f"Unexpected response code for CONNECT: {status} {reason} from proxy {proxy}",
                        proxy=proxy,
                        status_code=status,
                    )
                if attempt == MAX_TUNNEL_ATTEMPTS:
                    break
                challenge = Response(407, headers=headers, request=request, reason=reason)
                answer = None
                if self.proxy_authenticator is not None:
                    answer = _authenticate(self.proxy_authenticator, route, challenge, proxy)
                if answer is None:
                    sent = request.headers.get("Proxy-Authorization") is not None
                    if sent:
                        why = " (the credentials sent were rejected)"
                    elif not any(n.lower() == "proxy-authenticate" for n, _ in headers):
                        why = " (no credentials were given, and the proxy sent no Proxy-Authenticate)"
                    else:
                        why = " (no credentials were given)"
                    raise ProxyError(
                        f"Failed to authenticate with proxy {proxy}: 407 {reason}{why}",
                        proxy=proxy,
                        status_code=407,
                    )
                request = answer
                if close:
                    sock.close()
                    sock = None
                    sock = self.reconnect(route, chain, call, target)
            raise ProxyError(
                f"Too many tunnel connections attempted: {MAX_TUNNEL_ATTEMPTS} (proxy {proxy})",
                proxy=proxy,
                status_code=407,
            )
        except BaseException:
            if sock is not None:
                _close_quietly(sock)
            raise

    def reconnect(self, route: Route, chain: Any, call: Any, target: tuple[str, int]) -> Any:
        """A new socket to the route's proxy (TLS to it for ``Proxy.https``), after a 407 that closed."""
        sock, _route, _failures = connect_tcp(
            [route],
            connect_timeout=chain.connect_timeout or None,
            happy_eyeballs=False,
            is_canceled=lambda: call.canceled,
            target_of=lambda r: target,
        )
        try:
            _set_socket_timeouts(sock, chain.connect_timeout or chain.read_timeout)
        except OSError:
            sock.close()
            raise
        proxy = route.proxy
        if proxy.tls:
            sock = self.wrap_tls(sock, str(proxy.host), int(proxy.port or 0), self.ssl_context, call)
        return sock


class TlsInTlsSocket:
    """A TLS session carried inside another TLS connection, with the socket methods fastnet uses.

    Needed for an https origin through ``Proxy.https``: the outer TLS connection goes to the proxy,
    the inner one (an ``ssl.SSLObject`` over two ``ssl.MemoryBIO``) to the origin through the CONNECT
    tunnel. Records are moved between the BIOs and the outer socket on demand, in the calling thread.
    Timeouts are the outer socket's (``setsockopt``/``settimeout`` are passed through); a timeout
    surfaces as the outer socket's ``SSLWantReadError``/``socket.timeout``, as on a direct TLS socket.

    >>> inner = TlsInTlsSocket(proxy_tls_socket, context, "origin.example", None)  # doctest: +SKIP
    >>> inner.sendall(b"GET / HTTP/1.1\r\nHost: origin.example\r\n\r\n")        # doctest: +SKIP
    """

    __slots__ = ("_outer", "_obj", "_incoming", "_outgoing", "_eof")

    def __init__(
        self, outer: Any, context: ssl.SSLContext, server_hostname: str, session: Any = None
    ) -> None:
        self._outer = outer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._eof = False
        self._obj = context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname, session=session
        )
        self._run(self._obj.do_handshake)

    # -- record pump ------------------------------------------------------------------------------

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._outer.sendall(data)

    def _run(self, op: Any, *args: Any) -> Any:
        while True:
            try:
                result = op(*args)
            except ssl.SSLWantReadError:
                self._flush()
                if self._eof:
                    raise ssl.SSLEOFError(ssl.SSL_ERROR_EOF, "EOF in the middle of a TLS record") from None
                data = self._outer.recv(65536)
                if data:
                    self._incoming.write(data)
                else:
                    self._eof = True
                    self._incoming.write_eof()
                continue
            self._flush()
            return result

    # -- the socket surface ---------------------------------------------------------------------

    def sendall(self, data: Any) -> None:
        view = memoryview(data)
        while len(view):
            written = self._run(self._obj.write, view)
            view = view[written:]

    def send(self, data: Any) -> int:
        self.sendall(data)
        return len(data)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        if flags:
            raise ValueError("non-zero flags not allowed in calls to recv_into() on a TLS-in-TLS socket")
        size = nbytes or len(buffer)
        if size == 0:
            return 0
        try:
            return int(self._run(self._obj.read, size, buffer))
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return 0  # close_notify, or a ragged EOF (as ssl's suppress_ragged_eofs)

    def recv(self, bufsize: int = 65536, flags: int = 0) -> bytes:
        if flags:
            # a health probe (MSG_PEEK | MSG_DONTWAIT): report decrypted bytes, else peek the raw socket
            if self._obj.pending() or self._incoming.pending:
                return b"\x00"
            return socket.socket.recv(self._outer, bufsize, flags)
        buffer = bytearray(bufsize)
        n = self.recv_into(buffer)
        return bytes(buffer[:n])

    def pending(self) -> int:
        return int(self._obj.pending())

    def version(self) -> str | None:
        return self._obj.version()

    def cipher(self) -> Any:
        return self._obj.cipher()

    def selected_alpn_protocol(self) -> str | None:
        return self._obj.selected_alpn_protocol()

    def getpeercert(self, binary_form: bool = False) -> Any:
        return self._obj.getpeercert(binary_form)

    @property
    def session(self) -> Any:
        return self._obj.session

    @property
    def session_reused(self) -> bool:
        return bool(self._obj.session_reused)

    @property
    def server_hostname(self) -> str | None:
        return self._obj.server_hostname

    @property
    def outer(self) -> Any:
        """The TLS socket to the proxy that carries this session."""
        return self._outer

    def setsockopt(self, *args: Any) -> None:
        self._outer.setsockopt(*args)

    def getsockopt(self, *args: Any) -> Any:
        return self._outer.getsockopt(*args)

    def settimeout(self, value: float | None) -> None:
        self._outer.settimeout(value)

    def gettimeout(self) -> float | None:
        return self._outer.gettimeout()  # type: ignore[no-any-return]

    def setblocking(self, flag: bool) -> None:
        self._outer.setblocking(flag)

    def fileno(self) -> int:
        return self._outer.fileno()  # type: ignore[no-any-return]

    def getpeername(self) -> Any:
        return self._outer.getpeername()

    def getsockname(self) -> Any:
        return self._outer.getsockname()

    def shutdown(self, how: int) -> None:
        socket.socket.shutdown(self._outer, how)

    def close(self) -> None:
        self._outer.close()

    def __enter__(self) -> TlsInTlsSocket:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TlsInTlsSocket {self._obj.server_hostname} over {self._outer!r}>"


def _close_quietly(sock: Any) -> None:
    try:
        sock.close()
    except OSError:
        pass


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _authenticate(authenticator: Any, route: Any, response: Any, proxy: Any) -> Any:
    """Ask the proxy authenticator; its own failure becomes a ProxyError naming the proxy."""
    method = getattr(authenticator, "authenticate", None)
    try:
        if method is None:
            return authenticator(route, response)
        return method(route, response)
    except NetworkError:
        raise
    except Exception as exc:
        raise ProxyError(
            f"proxy authenticator {authenticator!r} failed for proxy {proxy}: {exc!r}",
            proxy=proxy,
            status_code=407,
        ) from exc


def _exchange_connect(sock: Any, head: bytes, proxy: Any) -> tuple[int, str, list[Any], bool]:
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
    except (TimeoutError, BlockingIOError) as exc:
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
        self.connecting: Any = None
        self._proxy_ips: dict[str, str] = {}

    def has_more_routes(self) -> bool:
        return bool(self.pending) or self.selector.has_next()

    def cancel(self) -> None:
        self.canceled = True
        sock = self.connecting
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # aborts a blocking connect at once
            except OSError:
                # not connecting yet: closing makes the connect() about to start fail at once
                try:
                    sock.close()
                except OSError:
                    pass

    def _set_connecting(self, sock: Any) -> None:
        self.connecting = sock
        if sock is not None and self.canceled:
            raise CanceledError("Canceled", phase="connect")

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

    def _proxy_ip(self, proxy: Proxy) -> str:
        """The IP to dial for a SOCKS proxy given by name (resolved once per finder, client's Dns)."""
        host = proxy.host
        assert host is not None
        if is_ip_literal(host):
            return host
        ip = self._proxy_ips.get(host)
        if ip is None:
            from fastnet.dns import as_dns

            try:
                answer = as_dns(self.connector.dns).lookup(host)
            except UnknownHostError as exc:
                raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: {exc}", proxy=proxy) from exc
            if not answer:
                raise ProxyError(f"cannot resolve SOCKS proxy {proxy}: no addresses", proxy=proxy)
            first = answer[0]
            ip = first if isinstance(first, str) else str(first[0] if isinstance(first, tuple) else first)
            self._proxy_ips[host] = ip
        return ip

    def _target_of(self, route: Route) -> tuple[str, int]:
        """Where the TCP connect for ``route`` goes: the proxy for SOCKS, else the socket address."""
        proxy = route.proxy
        if proxy.type is ProxyType.SOCKS:
            return (self._proxy_ip(proxy), proxy.port)  # type: ignore[return-value]
        return route.socket_address

    def _connect(self, core: Any, chain: Any) -> Any:
        from fastnet._internal.core import RealConnection

        connector = self.connector
        call = self.call
        events = call.events
        attempts: list[tuple[Route, BaseException]] = []
        selection_errors: list[NetworkError] = []
        url = self.address.url

        def tcp_failed(route: Route, error: BaseException) -> None:
            attempts.append((route, error))
            if events is not None:
                events.connect_failed(call, route, error)
            connector.record_failure(call, route, error)

        def target_of(route: Route) -> tuple[str, int]:
            target = self._target_of(route)
            if events is not None:
                events.connect_start(call, route)
            return target

        while True:
            if self._is_canceled():
                raise CanceledError("Canceled", url=url, phase="connect")
            if not self.pending:
                if not self.selector.has_next():
                    break
                try:
                    self.pending = list(next(self.selector))
                except StopIteration:
                    break
                except (UnknownHostError, RouteError) as exc:
                    # one proxy (or the origin) could not be resolved: the next proxy may still work
                    selection_errors.append(exc)
                    continue
                if not self.pending:
                    continue
            routes = self.pending
            if routes[0].proxy.type is ProxyType.SOCKS:
                try:
                    self._proxy_ip(routes[0].proxy)
                except ProxyError as exc:
                    self.pending = []
                    for route in routes:
                        tcp_failed(route, exc)
                    continue
            try:
                sock, route, failures = connect_tcp(
                    routes,
                    connect_timeout=chain.connect_timeout or None,
                    happy_eyeballs=connector.happy_eyeballs,
                    is_canceled=self._is_canceled,
                    on_failure=tcp_failed,
                    target_of=target_of,
                    on_overtaken=connector.record_overtaken,
                    on_socket=self._set_connecting,
                )
            except (ConnectError, ConnectTimeout) as exc:
                if not attempts:
                    attempts.extend(getattr(exc, "attempts", []) or [(routes[0], exc)])
                self.pending = []
                continue
            except CanceledError as exc:
                exc._locate(url, "connect")
                raise
            failed = {id(r) for r, _ in failures}
            self.pending = [r for r in routes if r is not route and id(r) not in failed]
            try:
                sock = self._establish(sock, route, call, chain)
            except NetworkError as exc:
                tcp_failed(route, exc)
                if isinstance(exc, (TlsVerificationError, CanceledError)):
                    exc._locate(url, exc.phase)
                    raise
                continue
            connector.record_success(route)
            if events is not None:
                events.connect_end(call, route)
            proxy = route.proxy
            http_proxy = proxy.type is ProxyType.HTTP and not route.requires_tunnel
            conn = RealConnection(sock, route, self.address, self.address.is_https, http_proxy)
            if not conn.is_tls:
                # the kernel timeouts _establish set: the first set_timeouts() skips equal values
                conn.read_timeout = conn.write_timeout = chain.connect_timeout or chain.read_timeout
            if http_proxy and proxy.authorization is not None:
                conn.proxy_authorization = proxy.authorization  # type: ignore[assignment]
            return conn
        if not attempts and selection_errors:
            raise selection_errors[0]._locate(url, selection_errors[0].phase)
        if len(attempts) == 1:
            error = attempts[0][1]
            if isinstance(error, NetworkError) and not isinstance(error, ConnectError):
                raise error._locate(url, error.phase)
        if attempts and all(isinstance(e, ConnectTimeout) for _, e in attempts):
            message = f"connect to {self.address.url.authority} timed out"
            if len(attempts) > 1:
                message += " [tried " + "; ".join(f"{r}: {e}" for r, e in attempts) + "]"
            timeout = ConnectTimeout(message, url=url, phase="connect")
            timeout.attempts = list(attempts)  # type: ignore[attr-defined]
            raise timeout from attempts[-1][1]
        detail = f": {attempts[-1][1]}" if attempts else ""
        error = ConnectError(
            f"Failed to connect to {self.address.url.authority}{detail}", url=url, attempts=attempts
        )
        raise error from (attempts[-1][1] if attempts else None)

    def _establish(self, sock: Any, route: Route, call: Any, chain: Any) -> Any:
        """SOCKS handshake or CONNECT tunnel, then TLS to the origin. Closes the socket on failure."""
        connector = self.connector
        address = self.address
        proxy = route.proxy
        handshake_timeout = chain.connect_timeout or chain.read_timeout
        try:
            _set_socket_timeouts(sock, handshake_timeout)
            if proxy.type is ProxyType.SOCKS:
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
            elif proxy.type is ProxyType.HTTP:
                if proxy.tls:
                    sock = connector.wrap_tls(
                        sock, str(proxy.host), int(proxy.port or 0), connector.ssl_context, call
                    )
                if route.requires_tunnel:
                    sock = connector.open_tunnel(sock, route, call, chain, self._target_of(route))
            if address.is_https:
                sock = connector.wrap_tls(sock, address.host, address.port, address.ssl_context, call)
        except BaseException as exc:
            _close_quietly(sock)  # idempotent: wrap_tls and open_tunnel already closed what they own
            if isinstance(exc, NetworkError):
                exc._locate(address.url, exc.phase)
                raise
            if isinstance(exc, (BlockingIOError, socket.timeout)):
                raise ConnectTimeout(
                    f"handshake with {route} timed out", url=address.url, phase="connect"
                ) from exc
            if isinstance(exc, OSError):
                raise ConnectError(f"handshake with {route} failed: {exc}", url=address.url) from exc
            raise
        return sock
