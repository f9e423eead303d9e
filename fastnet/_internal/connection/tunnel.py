"""CONNECT tunnels through HTTP proxies, with proxy authentication.

Theory of operation
-------------------
``open_tunnel`` sends ``CONNECT host:port`` until the proxy answers 200, at most
``MAX_TUNNEL_ATTEMPTS`` requests in all (OkHttp sets no cap; a proxy that answers 407 forever would
otherwise keep a call busy forever). The whole exchange is written once, sans-I/O, as the generator
``tunnel_steps``: it yields ``bytes`` to send, an ``int`` (receive up to that many bytes; ``b""`` is EOF),
an ``Ask`` (call the proxy authenticator; the answer is sent back) or ``RECONNECT`` (close the socket and
open a new one to the same proxy), and a failure of any step is thrown into it where it yielded. Two
drivers run it: ``open_tunnel`` over a blocking socket and ``open_tunnel_async`` over an asyncio
connection in raw mode, where the authenticator may also be a coroutine function. The decisions:

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

import inspect
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Protocol, TypeVar

from fastnet._internal.http1.parser import BODY_CHUNKED, BODY_LENGTH, BODY_UNTIL_CLOSE, ResponseParser
from fastnet._internal.util.sockets import close_quietly
from fastnet.authenticator import PREEMPTIVE_SCHEME
from fastnet.exceptions import NetworkError, ProtocolError, ProxyError
from fastnet.headers import Headers
from fastnet.request import Request
from fastnet.response import Response

if TYPE_CHECKING:
    from fastnet.authenticator import AuthenticatorAnswer, AuthenticatorLike
    from fastnet.proxy import Proxy
    from fastnet.route import Address, Route

__all__ = [
    "MAX_TUNNEL_ATTEMPTS",
    "RECONNECT",
    "Ask",
    "connect_head",
    "next_tunnel_request",
    "open_tunnel",
    "open_tunnel_async",
    "preemptive_tunnel_request",
    "tunnel_request",
    "tunnel_steps",
]

MAX_TUNNEL_ATTEMPTS = 21
_READ_SIZE = 65536

#: The step asking the driver to close the socket and open a new one to the same proxy.
RECONNECT = "reconnect"


class _Socket(Protocol):
    """What ``open_tunnel`` uses of a blocking socket (a ``socket.socket``, or a TLS socket to the proxy)."""

    def recv(self, bufsize: int, /) -> bytes: ...
    def sendall(self, data: bytes, /) -> None: ...
    def close(self) -> None: ...


class _RawConnection(Protocol):
    """What ``open_tunnel_async`` uses of an asyncio connection in raw mode (``AsyncRealConnection``)."""

    async def recv(self, timeout: float) -> bytes: ...
    def write(self, data: bytes) -> None: ...
    def close(self) -> None: ...


_S = TypeVar("_S", bound=_Socket)
_C = TypeVar("_C", bound=_RawConnection)
_T = TypeVar("_T")


class Ask:
    """The step asking the driver for the proxy authenticator's answer to ``response``."""

    __slots__ = ("authenticator", "route", "response")

    def __init__(self, authenticator: AuthenticatorLike, route: Route, response: Response) -> None:
        self.authenticator = authenticator
        self.route = route
        self.response = response

    def call(self) -> AuthenticatorAnswer:
        """The authenticator's answer (an awaitable, from an asyncio authenticator)."""
        authenticator = self.authenticator
        method = getattr(authenticator, "authenticate", None)
        if method is None:
            return authenticator(self.route, self.response)  # type: ignore[operator]  # a function
        answer: AuthenticatorAnswer = method(self.route, self.response)
        return answer


#: What the steps that only ask the authenticator yield (``Ask``), are sent (its answer) and return.
_Asking = Generator[Ask, "AuthenticatorAnswer", _T]
#: What ``tunnel_steps`` yields (bytes to send, a number of bytes to receive, ``Ask``, ``RECONNECT``) and
#: is sent back (the bytes received, the authenticator's answer, else ``None``).
_Steps = Generator["bytes | int | Ask | str", "bytes | AuthenticatorAnswer", _T]


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


def preemptive_tunnel_request(
    route: Route, request: Request, proxy_authenticator: AuthenticatorLike | None
) -> Request:
    """Proxy credentials before the first CONNECT: the proxy URL's own, else the authenticator's answer
    to a synthetic 407."""
    return _decide(_preemptive_steps(route, request, proxy_authenticator))


def _preemptive_steps(
    route: Route, request: Request, proxy_authenticator: AuthenticatorLike | None
) -> _Asking[Request]:
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
    answer = yield from _authenticate(proxy_authenticator, route, synthetic, proxy)
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
    proxy_authenticator: AuthenticatorLike | None,
) -> Request:
    """The CONNECT to send after a non-200 answer to ``request``; raises ``ProxyError`` to give up."""
    steps = _next_steps(route, request, status, reason, headers, attempt, proxy_authenticator)
    return _decide(steps)


def _next_steps(
    route: Route,
    request: Request,
    status: int,
    reason: str,
    headers: list[tuple[str, str]],
    attempt: int,
    proxy_authenticator: AuthenticatorLike | None,
) -> _Asking[Request]:
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
        answer = yield from _authenticate(proxy_authenticator, route, challenge, proxy)
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


def tunnel_steps(
    route: Route, user_agent: str, proxy_authenticator: AuthenticatorLike | None
) -> _Steps[None]:
    """The CONNECT exchange until the proxy answers 200, as steps (see the module doc)."""
    request = yield from _preemptive_steps(
        route, tunnel_request(route.address, user_agent), proxy_authenticator
    )
    attempt = 1
    while True:
        status, reason, headers, close = yield from _connect_steps(connect_head(route, request), route.proxy)
        if status == 200:
            return
        request = yield from _next_steps(
            route, request, status, reason, headers, attempt, proxy_authenticator
        )
        attempt += 1
        if close:
            yield RECONNECT


def open_tunnel(
    sock: _S,
    route: Route,
    user_agent: str,
    proxy_authenticator: AuthenticatorLike | None,
    reconnect: Callable[[], _S],
) -> _S:
    """Send CONNECT until the proxy answers 200 (at most MAX_TUNNEL_ATTEMPTS requests in all).

    Returns the tunnelled socket: ``sock``, or after a 407 that closed the connection a new socket to the
    same proxy from ``reconnect()``. On failure every socket opened here is closed.
    """
    steps = tunnel_steps(route, user_agent, proxy_authenticator)
    try:
        step = next(steps)
        while True:
            answer: bytes | AuthenticatorAnswer = None
            try:
                if isinstance(step, int):
                    answer = sock.recv(step)
                elif isinstance(step, bytes):
                    sock.sendall(step)
                elif isinstance(step, Ask):
                    answer = step.call()
                else:  # RECONNECT
                    sock.close()
                    sock = None  # type: ignore[assignment]  # none to close if reconnect() fails
                    sock = reconnect()
            except Exception as exc:
                if step is RECONNECT:
                    raise
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration:
        return sock
    except BaseException:
        if sock is not None:
            close_quietly(sock)
        raise
    finally:
        steps.close()


async def open_tunnel_async(
    conn: _C,
    route: Route,
    user_agent: str,
    proxy_authenticator: AuthenticatorLike | None,
    reconnect: Callable[[], Awaitable[_C]],
    timeout: float,
) -> _C:
    """``open_tunnel`` over an asyncio connection in raw mode (``write``, ``await recv(timeout)``); the
    authenticator's answer is awaited when it is awaitable. Returns the tunnelled connection: ``conn``,
    or one from ``await reconnect()`` after a 407 that closed. On failure every connection opened here
    is closed."""
    steps = tunnel_steps(route, user_agent, proxy_authenticator)
    try:
        step = next(steps)
        while True:
            answer: bytes | AuthenticatorAnswer = None
            try:
                if isinstance(step, int):
                    answer = await conn.recv(timeout)
                elif isinstance(step, bytes):
                    conn.write(step)
                elif isinstance(step, Ask):
                    answer = step.call()
                    if inspect.isawaitable(answer):
                        answer = await answer
                else:  # RECONNECT
                    conn.close()
                    conn = None  # type: ignore[assignment]  # none to close if reconnect() fails
                    conn = await reconnect()
            except Exception as exc:
                if step is RECONNECT:
                    raise
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration:
        return conn
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    finally:
        steps.close()


def _decide(steps: _Asking[_T]) -> _T:
    """Run steps that only ask the authenticator (no I/O), in the calling thread; their result."""
    try:
        step = next(steps)
        while True:
            try:
                answer = step.call()
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration as done:
        value: _T = done.value
        return value


def _authenticate(
    authenticator: AuthenticatorLike, route: Route, response: Response, proxy: Proxy
) -> _Asking[Request | None]:
    """Ask the proxy authenticator; its own failure becomes a ProxyError naming the proxy."""
    try:
        # the authenticator's answer: a blocking one's, or an asyncio one's once the asyncio driver awaited it
        answer: Request | None = yield Ask(authenticator, route, response)  # type: ignore[assignment]
    except NetworkError:
        raise
    except Exception as exc:
        raise ProxyError(
            f"proxy authenticator {authenticator!r} failed for proxy {proxy}: {exc!r}",
            proxy=proxy,
            status_code=407,
        ) from exc
    return answer


def _connect_steps(
    head: bytes, proxy: Proxy
) -> Generator[bytes | int, bytes, tuple[int, str, list[tuple[str, str]], bool]]:
    """Write one CONNECT and read the proxy's answer: (status, reason, headers, must_close). It is sent
    the bytes received after each ``int`` it yields (what it is sent after the head is not read)."""
    parser = ResponseParser()
    try:
        yield head
        while True:
            parsed = parser.read_head(False)
            if parsed is not None:
                if parsed[0] < 200:
                    continue
                break
            data: bytes | None = yield _READ_SIZE
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
                    more = yield _READ_SIZE
                    parser.feed(more)
                    if not more:
                        close = True
                        break
        except (OSError, ProtocolError):
            close = True
    elif body_mode == BODY_CHUNKED or body_mode == BODY_UNTIL_CLOSE:
        close = True
    return status, reason, headers, close
