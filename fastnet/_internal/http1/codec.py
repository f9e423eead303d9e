"""The HTTP/1.1 codec's decisions, apart from any socket: what to write, and what a response head means.

Theory of operation
-------------------
Every function here takes bytes and values and returns bytes and values; none of them does I/O. The sync
exchange (``exchange.py``) and the asyncio one drive the same functions from their own socket calls, so
framing and reuse rules exist once:

* ``request_head`` serialises a request line and header block. A request whose headers are one of the
  Bridge's cached default blocks gets its whole head cached on that block, per method and target, so a
  keep-alive GET costs one dict lookup here.
* ``frame_chunk``/``LAST_CHUNK`` frame a body of unknown length (RFC 9112 §7.1)::

      chunked-body = *chunk last-chunk trailer-section CRLF
      chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
      last-chunk   = 1*("0") [ chunk-ext ] CRLF

* ``request_framing`` reads how a request's body is framed from its headers (exactly one of
  ``Content-Length`` and ``Transfer-Encoding: chunked``, or no body): the exchange writes exactly that,
  so the bytes on the wire always match their framing (RFC 9112 §6.1: a sender must not send both).
* ``open_response`` turns a parsed final head into a ``Response`` and says whether the connection may
  carry another exchange afterwards. It rejects a 204/205 that announces a body and a ``101 Switching
  Protocols`` the request did not ask for (no ``Upgrade`` header).
* At most ``MAX_INTERIM_RESPONSES`` interim (1xx) heads are skipped before the final one.
* ``map_io_error`` is the one place an ``OSError`` from a socket becomes a typed ``NetworkError``.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from fastnet._internal.http1.parser import BODY_LENGTH
from fastnet.exceptions import (
    CallTimeout,
    CanceledError,
    ConnectionClosedError,
    NetworkError,
    ProtocolError,
    ReadTimeout,
    WriteTimeout,
)
from fastnet.headers import headers_from_list
from fastnet.response import make_response

if TYPE_CHECKING:
    from fastnet.request import Request
    from fastnet.response import Response
    from fastnet.route import Route
    from fastnet.url import URL

__all__ = [
    "LAST_CHUNK",
    "MAX_INTERIM_RESPONSES",
    "NO_BODY",
    "SMALL_BODY",
    "CHUNKED",
    "expects_continue",
    "frame_chunk",
    "map_io_error",
    "open_response",
    "request_framing",
    "request_head",
]

#: A body up to this size goes out in the same ``sendall`` as the head.
SMALL_BODY = 65536
LAST_CHUNK = b"0\r\n\r\n"
#: ``request_framing`` results other than a length: no body bytes at all, or a chunked body.
NO_BODY = -2
CHUNKED = -1
#: Interim (1xx) responses skipped before the final one; more is a ProtocolError (a server could send
#: them forever). Real servers send one or two (100 Continue, 103 Early Hints).
MAX_INTERIM_RESPONSES = 32
_MAX_CACHED_HEADS = 512
_TIMEOUT_ERRORS = ("SSLWantReadError", "SSLWantWriteError")


def request_head(request: Request, http_proxy: bool, proxy_authorization: str | None) -> bytes:
    """The request line and header block of ``request``, ready for the wire.

    ``http_proxy``: the connection goes to an HTTP proxy without a tunnel, so a plain-http request is
    sent in absolute form with the proxy's own ``proxy_authorization``. Every other request never carries
    ``Proxy-Authorization``: proxy credentials are never handed to an origin.
    """
    headers = request.headers
    url = request.url
    heads = headers._heads
    if heads is not None and not http_proxy:
        # a Bridge default header block: its whole request head is cached per method and target
        key = request.method + url.target
        head = heads.get(key)
        if head is None:
            head = b"%s %s HTTP/1.1\r\n%b\r\n" % (
                request.method.encode("ascii"),
                url.target.encode("ascii"),
                headers.to_wire(),
            )
            if len(heads) < _MAX_CACHED_HEADS:
                heads[key] = head
        return head
    if http_proxy and not url.is_https:
        target = f"{url.scheme}://{url.host_header}{url.target}"
        if proxy_authorization is not None and "proxy-authorization" not in headers._lookup():
            headers = headers.add("Proxy-Authorization", proxy_authorization)
    else:
        target = url.target
        if "proxy-authorization" in headers._lookup():
            headers = headers.remove("proxy-authorization")
    return b"%s %s HTTP/1.1\r\n%b\r\n" % (
        request.method.encode("ascii"),
        target.encode("ascii"),
        headers.to_wire(),
    )


def expects_continue(request: Request) -> bool:
    """Whether the request waits for ``100 Continue`` before sending its body (RFC 9110 §10.1.1)."""
    if request.body is None or not request.headers._items:
        return False
    expect = request.headers.get("expect")
    return expect is not None and expect.lower() == "100-continue"


def request_framing(request: Request) -> int:
    """How the request body is framed on the wire: its exact length (``Content-Length``), ``CHUNKED``,
    or ``NO_BODY``. Raises ``ValueError`` for headers that do not describe the body (both framings, a
    length that is not a number, a length with no body, a body with no framing); the Bridge never builds
    such a request, but a network interceptor can.

    RFC 9112 §6.1: "A sender MUST NOT send a Content-Length header field in any message that contains a
    Transfer-Encoding header field."
    """
    headers = request.headers
    body = request.body
    if body is None and headers._heads is not None:
        return NO_BODY  # a Bridge default header block: no framing headers at all
    lookup = headers._lookup()
    length = lookup.get("content-length")
    coding = lookup.get("transfer-encoding")
    if length is not None and coding is not None:
        raise ValueError("a request must not carry both Content-Length and Transfer-Encoding")
    if coding is not None:
        if coding.strip().lower() != "chunked":
            raise ValueError(f"unsupported request Transfer-Encoding {coding!r} (only chunked)")
        return CHUNKED
    if length is not None:
        text = length.strip()
        if not text.isdigit() or not text.isascii():
            raise ValueError(f"request Content-Length {length!r} is not a number")
        declared = int(text)
        if body is None and declared:
            raise ValueError(f"request Content-Length is {declared}, but the request has no body")
        return declared
    if body is not None:
        raise ValueError("a request body needs Content-Length or Transfer-Encoding: chunked")
    return NO_BODY


def frame_chunk(chunk: bytes) -> bytes:
    """One chunk of a chunked body: size in hex, CRLF, the data, CRLF."""
    return b"%x\r\n%b\r\n" % (len(chunk), chunk)


def open_response(
    head: tuple[int, str, str, list[tuple[str, str]], int, int, bool, str],
    request: Request,
    route: Route | None,
) -> tuple[Response, bool]:
    """The ``Response`` for a parsed final head, and whether the connection stays reusable after it.

    Raises ``ProtocolError`` for a 204 or 205 that announces a body (RFC 9110 §15.3.5), and for a 101 the
    request did not ask for: "A server MUST NOT switch to a protocol that was not indicated by the client
    in the corresponding request's Upgrade header field" (RFC 9110 §7.8).
    """
    status, reason, version, header_list, body_mode, length, keep_alive, _encoding = head
    if body_mode == BODY_LENGTH and (status == 204 or status == 205) and length > 0:
        raise ProtocolError(f"HTTP {status} had non-zero Content-Length: {length}", url=request.url)
    if status == 101 and (not request.headers._items or "upgrade" not in request.headers._lookup()):
        raise ProtocolError(
            "unsolicited 101 Switching Protocols: the request asked for no Upgrade", url=request.url
        )
    response = make_response(
        status,
        reason,
        "HTTP/1.0" if version == "1.0" else "HTTP/1.1",
        headers_from_list(header_list),
        request,
        route,
    )
    if keep_alive and request.headers._items:
        # "Connection: close" in the request ends the connection as surely as in the response
        connection = request.headers._lookup().get("connection")
        if connection is not None and "close" in [t.strip() for t in connection.lower().split(",")]:
            keep_alive = False
    return response, keep_alive


def map_io_error(
    exc: BaseException, phase: str, url: URL | None, canceled: bool, timed_out: bool
) -> NetworkError:
    """The typed error for a failed socket operation in ``phase`` ("read" or "write").

    A canceled call reports its cancellation (or call timeout), whatever the socket said after being
    shut down under it.
    """
    if canceled:
        if timed_out:
            return CallTimeout("call timeout", url=url, phase=phase)
        return CanceledError("canceled", url=url, phase=phase)
    if isinstance(exc, NetworkError):
        return exc
    if isinstance(exc, (BlockingIOError, socket.timeout)) or type(exc).__name__ in _TIMEOUT_ERRORS:
        if phase == "write":
            return WriteTimeout("write timed out", url=url, phase=phase)
        return ReadTimeout("read timed out", url=url, phase=phase)
    if isinstance(exc, OSError):
        return ConnectionClosedError(f"connection lost: {exc}", url=url, phase=phase)
    return ConnectionClosedError(str(exc), url=url, phase=phase)
