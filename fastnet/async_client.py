"""``AsyncClient``: the asyncio client, on the same engine as ``Client``.

>>> async with fastnet.AsyncClient(read_timeout=5) as client:
...     r = await client.get("http://127.0.0.1:8080/")
...     async with client.stream("GET", "http://127.0.0.1:8080/big") as r:
...         async for chunk in r.aiter_bytes(): ...

It takes exactly ``Client``'s options, checked by the same code, and its calls run the same chain: the
asyncio forms of RetryAndFollowUp, Bridge, Connect and CallServer, which ``scripts/unasync.py`` turns
into the blocking ones, so the redirect, retry, auth, cookie, framing and pooling rules are one set.
Requests, responses, headers, URLs, errors, routes, proxies, authenticators and events are the same
classes as the blocking client's. Sockets are non-blocking and driven by the running loop (the default
loop or uvloop); connections live in the pool's asyncio half, so a ``ConnectionPool`` can serve a
``Client`` and an ``AsyncClient`` at once (each with its own connections).

Interceptors are ``async def intercept(chain)`` objects (or ``async def`` functions taking the chain)
that ``await chain.proceed(request)``; ``fastnet.Retry`` works in both clients. Authenticators, cookie
jars, proxy selectors and DNS resolvers may be blocking or coroutine functions: a blocking one runs on
the loop's thread and blocks the loop while it runs.

A client is not bound to one loop, but a connection is: a pooled connection made on a loop that is no
longer running is closed rather than reused.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Coroutine, Generator, Iterable
from typing import TYPE_CHECKING

from fastnet._internal._async.map_calls import async_map_calls
from fastnet._internal._async.real_call import AsyncRealCall, new_async_call
from fastnet._internal._async.real_call import get as _get
from fastnet._internal._async.real_call import request as _request
from fastnet._internal.call.assembly import Engine, asyncio_engine
from fastnet._internal.call.async_verbs import AsyncVerbs
from fastnet.client import ClientBase
from fastnet.request import Request
from fastnet.timeout import USE_CLIENT_DEFAULT

if TYPE_CHECKING:
    from fastnet._internal._sync.map_calls import MapItem
    from fastnet._internal.call.options import AuthLike, CookiesLike, DataLike, FilesLike, ParamsLike
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.timeout import TimeoutTypes, UseClientDefault
    from fastnet.url import URL

__all__ = ["AsyncCall", "AsyncClient"]

#: ``client.new_call(request)`` returns one; ``await call.execute()`` it once, ``cancel()`` it from anywhere.
AsyncCall = AsyncRealCall


class AsyncClient(ClientBase, AsyncVerbs):
    """An asyncio HTTP client: ``Client``'s options and behaviour, with ``await``.

    >>> async with fastnet.AsyncClient() as client:
    ...     r = await client.get("http://127.0.0.1:8080/")

    ``with_options(**changes)`` makes a sibling sharing the pool, route database and DNS cache.
    """

    _verbs = AsyncVerbs
    _entry_points = (_request, _get)

    @staticmethod
    def _engine() -> Engine:
        return asyncio_engine()

    # -- calls ----------------------------------------------------------------------------------

    def new_call(self, request: Request) -> AsyncCall:
        """An ``AsyncCall`` for ``request``; ``await call.execute()`` runs it (once). The request's
        ``timeout``, ``follow_redirects`` and ``auth`` (an Authenticator) apply to this call."""
        if not isinstance(request, Request):
            raise TypeError(f"new_call() takes a fastnet.Request, not {type(request).__name__}")
        return new_async_call(self._assembly.factory.core_for(self._core, request), request)

    def map(
        self,
        requests: Iterable[MapItem] | AsyncIterable[MapItem],
        *,
        max_in_flight: int = 32,
        ordered: bool = False,
    ) -> AsyncIterator[tuple[MapItem, Response | Exception]]:
        """Run many requests at once as tasks; ``async for item, result in client.map(...)`` gets
        ``(item, response_or_error)`` as each completes.

        The blocking ``Client.map``'s rules: URLs or ``fastnet.Request`` objects, from a (sync or async)
        iterable consumed lazily; at most ``max_in_flight`` requests running or waiting to be yielded;
        bodies read before they are yielded; ``ordered=True`` for input order; failures yielded, not
        raised. Leaving the loop early cancels what is in flight once the generator is closed (at once
        with ``contextlib.aclosing(client.map(...))``, else when it is collected).
        """
        return async_map_calls(self, requests, max_in_flight, ordered)

    def stream(
        self,
        method: str,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        body: BodyLike | None = None,
        data: DataLike | None = None,
        files: FilesLike | None = None,
        json: object = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> _Streaming:
        """Send a request whose body streams: ``async with client.stream(...) as response:`` closes it at
        the end of the block (``response = await client.stream(...)`` works too; then close it)."""
        return _Streaming(
            _request(
                self._core,
                method,
                url,
                params=params,
                headers=headers,
                cookies=cookies,
                body=body,
                data=data,
                files=files,
                json=json,
                auth=auth,
                timeout=timeout,
                follow_redirects=follow_redirects,
                proxy=proxy,
                stream=True,
            )
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the client: new calls raise. When no other open client uses its connection pool, every
        connection in the pool is closed, in use or idle (as ``Client.close``)."""
        self._close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Streaming:
    """``client.stream(...)``: an async context manager over the streamed response, or an awaitable."""

    __slots__ = ("_pending", "_response")

    def __init__(self, pending: Coroutine[object, None, Response]) -> None:
        self._pending = pending
        self._response: Response | None = None

    def __await__(self) -> Generator[object, None, Response]:
        response: Response = yield from self._pending.__await__()
        return response

    async def __aenter__(self) -> Response:
        response: Response = await self._pending
        self._response = response
        return response

    async def __aexit__(self, *exc: object) -> None:
        response = self._response
        if response is not None:
            self._response = None
            await response.aclose()
