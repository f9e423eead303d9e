"""CONNECT tunnels through HTTP proxies, with proxy authentication.

Theory of operation
-------------------
``open_tunnel`` sends ``CONNECT host:port`` until the proxy answers 200, at most
``MAX_TUNNEL_ATTEMPTS`` requests in all (OkHttp sets no cap; a proxy that answers 407 forever would
otherwise keep a call busy forever). The decisions are apart from the socket calls, so the asyncio
client drives the same ones:

* ``tunnel_request`` is the CONNECT request: ``Host``, ``Proxy-Connection`` and ``User-Agent`` only,
  none of the user's headers, cookies or origin credentials.
* ``preemptive_tunnel_request`` adds credentials before the first CONNECT: the proxy URL's own, else
  what the proxy authenticator answers to a synthetic 407 whose challenge scheme is
  ``fastnet-preemptive``.
* ``next_tunnel_request`` turns a non-200 answer into the next CONNECT (the authenticator's answer to a
  real 407) or a ``ProxyError`` that says why.
* After each answer the socket is closed before the next attempt when the proxy said
  ``Connection: close`` or ``Proxy-Connection: close`` on its 407, or sent a 407 body we cannot skip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastnet._internal.connection.sockets import close_quietly
from fastnet._internal.http1.parser import BODY_CHUNKED, BODY_LENGTH, BODY_UNTIL_CLOSE, ResponseParser
from fastnet.authenticator import PREEMPTIVE_SCHEME
from fastnet.exceptions import NetworkError, ProtocolError, ProxyError
from fastnet.headers import Headers
from fastnet.request import Request
from fastnet.response import Response

if TYPE_CHECKING:
    from fastnet.proxy import Proxy
    from fastnet.route import Address, Route

__all__ = [
    "MAX_TUNNEL_ATTEMPTS",
    "connect_head",
    "next_tunnel_request",
    "open_tunnel",
    "preemptive_tunnel_request",
    "tunnel_request",
]

MAX_TUNNEL_ATTEMPTS = 21
_READ_SIZE = 65536


def tunnel_request(address: Address, user_agent: str) -> Request:
    """The CONNECT request: only Host, Proxy-Connection and User-Agent (nothing of the user's)."""
    authority = address.url.authority
    return Request(
        "CONNECT",
        address.url,
        headers=Headers(
            [("Host", authority), ("Proxy-Connection", "Keep-Alive"), ("User-Agent", user_agent)]
        ),
    )


def preemptive_tunnel_request(route: Route, request: Request, proxy_authenticator: Any) -> Request:
    """Proxy credentials before the first CONNECT: the proxy URL's own, else the authenticator's answer
    to a synthetic 407."""
    proxy = route.proxy
    if proxy.authorization is not None:
        return request.replace(headers=request.headers.set("Proxy-Authorization", proxy.authorization))
    if proxy_authenticator is None:
        return request
    synthetic = Response(
        407,
        headers=[("Proxy-Authenticate", PREEMPTIVE_SCHEME)],
        request=request,
        reason="Preemptive Authenticate",
    )
    answer = _authenticate(proxy_authenticator, route, synthetic, proxy)
    return answer if answer is not None else request


def connect_head(route: Route, request: Request) -> bytes:
    """The CONNECT request line and headers for the wire."""
    return b"CONNECT %s HTTP/1.1\r\n%s\r\n" % (
        route.address.url.authority.encode("ascii"),
        request.headers.to_wire(),
    )


def next_tunnel_request(
    route: Route,
    request: Request,
    status: int,
    reason: str,
    headers: list[tuple[str, str]],
    attempt: int,
    proxy_authenticator: Any,
) -> Request:
    """The CONNECT to send after a non-200 answer to ``request``; raises ``ProxyError`` to give up."""
    proxy = route.proxy
    if status != 407:
        raise ProxyError(
            f"Unexpected response code for CONNECT: {status} {reason} from proxy {proxy}",
            proxy=proxy,
            status_code=status,
        )
    if attempt >= MAX_TUNNEL_ATTEMPTS:
        raise ProxyError(
            f"Too many tunnel connections attempted: {MAX_TUNNEL_ATTEMPTS} (proxy {proxy})",
            proxy=proxy,
            status_code=407,
        )
    challenge = Response(407, headers=headers, request=request, reason=reason)
    answer = None
    if proxy_authenticator is not None:
        answer = _authenticate(proxy_authenticator, route, challenge, proxy)
    if answer is None:
        if request.headers.get("Proxy-Authorization") is not None:
            why = " (the credentials sent were rejected)"
        elif not any(n.lower() == "proxy-authenticate" for n, _ in headers):
            why = " (no credentials were given, and the proxy sent no Proxy-Authenticate)"
        else:
            why = " (no credentials were given)"
        raise ProxyError(
            f"Failed to authenticate with proxy {proxy}: 407 {reason}{why}", proxy=proxy, status_code=407
        )
    return answer


def open_tunnel(
    sock: Any,
    route: Route,
    user_agent: str,
    proxy_authenticator: Any,
    reconnect: Callable[[], Any],
) -> Any:
    """Send CONNECT until the proxy answers 200 (at most MAX_TUNNEL_ATTEMPTS requests in all).

    Returns the tunnelled socket: ``sock``, or after a 407 that closed the connection a new socket to the
    same proxy from ``reconnect()``. On failure every socket opened here is closed.
    """
    try:
        request = preemptive_tunnel_request(
            route, tunnel_request(route.address, user_agent), proxy_authenticator
        )
        attempt = 1
        while True:
            status, reason, headers, close = _exchange_connect(
                sock, connect_head(route, request), route.proxy
            )
            if status == 200:
                return sock
            request = next_tunnel_request(
                route, request, status, reason, headers, attempt, proxy_authenticator
            )
            attempt += 1
            if close:
                sock.close()
                sock = None
                sock = reconnect()
    except BaseException:
        if sock is not None:
            close_quietly(sock)
        raise


def _authenticate(authenticator: Any, route: Route, response: Response, proxy: Proxy) -> Request | None:
    """Ask the proxy authenticator; its own failure becomes a ProxyError naming the proxy."""
    method = getattr(authenticator, "authenticate", None)
    try:
        answer: Request | None = authenticator(route, response) if method is None else method(route, response)
    except NetworkError:
        raise
    except Exception as exc:
        raise ProxyError(
            f"proxy authenticator {authenticator!r} failed for proxy {proxy}: {exc!r}",
            proxy=proxy,
            status_code=407,
        ) from exc
    return answer


def _exchange_connect(sock: Any, head: bytes, proxy: Proxy) -> tuple[int, str, list[tuple[str, str]], bool]:
    """Write one CONNECT and read the proxy's answer: (status, reason, headers, must_close)."""
    parser = ResponseParser()
    try:
        sock.sendall(head)
        while True:
            parsed = parser.read_head(False)
            if parsed is not None:
                if parsed[0] < 200:
                    continue
                break
            data = sock.recv(_READ_SIZE)
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
    if body_mode == BODY_LENGTH and length > 0 and not close:
        try:
            while True:
                data = parser.read_body()
                if data is None:
                    break
                if not data:
                    more = sock.recv(_READ_SIZE)
                    parser.feed(more)
                    if not more:
                        close = True
                        break
        except (OSError, ProtocolError):
            close = True
    elif body_mode == BODY_CHUNKED or body_mode == BODY_UNTIL_CLOSE:
        close = True
    return status, reason, headers, close
