"""The bridge: from the user's request to the network's, and from the network's response back.

Theory of operation
-------------------
On the way out the Bridge adds what HTTP/1.1 needs and the user left out: ``Host``, ``Content-Length``
or ``Transfer-Encoding: chunked``, ``Content-Type`` from the body, ``Connection: keep-alive``,
``Accept-Encoding: gzip, deflate`` with ``br`` and ``zstd`` when their packages are installed (unless
the user set ``Accept-Encoding`` or ``Range``), ``Cookie`` from the jar (after a ``Cookie`` the request
carries itself: a name it sets is not sent twice) and ``User-Agent``. A request with no headers, body
or cookies gets a default header block that is built once per host and cached, with its wire bytes and
the whole request heads built on it (``codec.request_head``): that is most of what a keep-alive GET
costs.

On the way back it saves ``Set-Cookie`` to the jar and, when it asked for compression itself, decodes
the body transparently (``http1/decoders.py``): the response loses ``Content-Encoding`` and
``Content-Length``, and ``network_response`` keeps the head as received.

A cookie jar's ``load_for`` and ``save_from_response`` may be coroutine functions for the asyncio
client (a blocking one blocks the event loop while it runs).

.. async-only
``AsyncBridgeInterceptor`` is the asyncio client's. This file is also the source of the blocking
``BridgeInterceptor`` (``_bridge_py.py``, compiled as ``_bridge_c``): ``scripts/unasync.py`` writes it from
this one. Edit this file, then run the script.
.. end
.. sync-only
``BridgeInterceptor`` is the blocking client's: the pure-Python twin of the compiled ``_bridge_c`` (import
both through ``fastnet._internal.bridge``), written by ``scripts/unasync.py`` from ``async_bridge.py``. Edit
that file, then run the script.
.. end
"""

from __future__ import annotations

from inspect import isawaitable  # async-only
from typing import TYPE_CHECKING, Any

from fastnet._internal.async_chain import AsyncInternalInterceptor
from fastnet._internal.http1.decoders import ACCEPT_ENCODING, new_decoder
from fastnet._internal.http1.parser import BODY_NONE
from fastnet.cookies import cookie_header, merge_cookie_headers, parse_set_cookie
from fastnet.headers import Headers, headers_from_list
from fastnet.response import Response

if TYPE_CHECKING:
    from fastnet._internal.async_chain import AsyncRealInterceptorChain
    from fastnet._internal.client_core import ClientCore
    from fastnet._internal.http1.async_exchange import AsyncExchange
    from fastnet.request import Request
    from fastnet.url import URL

__all__ = ["AsyncBridgeInterceptor"]

# Methods that announce an empty body with ``Content-Length: 0`` (RFC 9110 §8.6).
_EMPTY_BODY_LENGTH = frozenset(("POST", "PUT", "PATCH"))
_MAX_DEFAULT_BLOCKS = 1024


class AsyncBridgeInterceptor(AsyncInternalInterceptor):
    """Turns the user's request into a network request and the network response into a user response.
    Default header blocks are built once per host and cached."""

    __slots__ = ("client", "defaults")
    client: ClientCore
    defaults: dict[str, Headers]  # the default header block per Host value

    def __init__(self, client: ClientCore) -> None:
        self.client = client
        self.defaults = {}

    def default_headers(self, url: URL) -> Headers:
        key = url.host_header
        headers = self.defaults.get(key)
        if headers is None:
            if len(self.defaults) > _MAX_DEFAULT_BLOCKS:
                self.defaults.clear()
            headers = headers_from_list(
                [
                    ("Host", key),
                    ("User-Agent", self.client.user_agent),
                    ("Accept-Encoding", ACCEPT_ENCODING),
                    ("Connection", "keep-alive"),
                ]
            )
            headers.to_wire()
            headers._heads = {}  # the codec caches whole request heads built on this block
            self.defaults[key] = headers
        return headers

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        request = chain.request
        network_request, gzip_added = await self.bridge_request(request)
        response = await chain.proceed(network_request)
        return await self.bridge_response(request, response, gzip_added)

    async def bridge_request(self, request: Request) -> tuple[Request, bool]:
        """The network request for ``request``, and whether the Bridge itself asked for compression."""
        user = request.headers
        jar = self.client.cookie_jar
        cookies = None
        if jar is not None:
            cookies = jar.load_for(request.url)
            if isawaitable(cookies):  # async-only
                cookies = await cookies  # async-only
        if (
            not user._items
            and request.body is None
            and not cookies
            and request.method not in _EMPTY_BODY_LENGTH
        ):
            return request.with_headers(self.default_headers(request.url)), True
        network_headers, gzip_added = self.build_headers(request, cookies)
        return request.with_headers(network_headers), gzip_added

    async def bridge_response(self, request: Request, response: Response, gzip_added: bool) -> Response:
        """The user's view of the network ``response``: cookies saved, the body decoded when we asked for
        compression."""
        jar = self.client.cookie_jar
        if jar is not None:
            set_cookies = response.headers.get_all("set-cookie")
            if set_cookies:
                await _save_cookies(jar, request.url, set_cookies)
        exchange: AsyncExchange | None = response._source  # type: ignore[assignment]
        if gzip_added and exchange is not None and exchange.content_encoding:
            if exchange.body_mode != BODY_NONE:
                decoder = new_decoder(exchange.content_encoding)
                if decoder is not None:
                    exchange.decompressor = decoder
                    response.network_response = _copy_head(response)
                    response.headers = response.headers.remove("content-encoding").remove("content-length")
        response.request = request
        return response

    def build_headers(self, request: Request, cookies: Any) -> tuple[Headers, bool]:
        user = request.headers
        body = request.body
        items = list(user._items)
        lookup = user._lookup()
        # exactly one framing, always (the codec writes the body the way these headers say)
        if body is not None:
            ctype = body.content_type
            if ctype is not None and "content-type" not in lookup:
                items.append(("Content-Type", ctype))
            if body.length >= 0:
                items = [p for p in items if p[0].lower() not in ("content-length", "transfer-encoding")]
                items.append(("Content-Length", str(body.length)))
            elif "content-length" in lookup:
                # a body of unknown length with the user's Content-Length: exactly that many bytes, unframed
                items = [p for p in items if p[0].lower() != "transfer-encoding"]
            else:
                items = [p for p in items if p[0].lower() != "transfer-encoding"]
                items.append(("Transfer-Encoding", "chunked"))
        else:
            if "transfer-encoding" in lookup:
                items = [p for p in items if p[0].lower() != "transfer-encoding"]  # no body: nothing to chunk
            if request.method in _EMPTY_BODY_LENGTH and "content-length" not in lookup:
                items.append(("Content-Length", "0"))
        if "host" not in lookup:
            items.insert(0, ("Host", request.url.host_header))
        if "connection" not in lookup:
            items.append(("Connection", "keep-alive"))
        gzip_added = False
        if "accept-encoding" not in lookup and "range" not in lookup:
            items.append(("Accept-Encoding", ACCEPT_ENCODING))
            gzip_added = True
        if cookies:
            value = cookie_header(cookies)
            sent = lookup.get("cookie")
            if sent:  # the request's own Cookie (cookies=): its names win over the jar's
                value = merge_cookie_headers(sent, value)
            items = [p for p in items if p[0].lower() != "cookie"]
            items.append(("Cookie", value))
        if "user-agent" not in lookup:
            items.append(("User-Agent", self.client.user_agent))
        return headers_from_list(items), gzip_added


async def _save_cookies(jar: Any, url: URL, values: list[str]) -> None:
    cookies = []
    for value in values:
        cookie = parse_set_cookie(value, url)
        if cookie is not None:
            cookies.append(cookie)
    if cookies:
        saved = jar.save_from_response(url, cookies)  # async-only
        if isawaitable(saved):  # async-only
            await saved  # async-only
        # sync-only: jar.save_from_response(url, cookies)


def _copy_head(response: Response) -> Response:
    copy = Response(
        response.status_code, response.headers, b"", response.request, response.reason, response.protocol
    )
    copy._unreadable = True
    return copy
