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

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TYPE_CHECKING

from fastnet._internal._async.map_calls import async_map_calls
from fastnet._internal._async.real_call import AsyncRealCall, new_async_call
from fastnet._internal._async.real_call import get as _get
from fastnet._internal._async.real_call import request as _request
from fastnet._internal.call.assembly import Engine, asyncio_engine
from fastnet._internal.call.async_verbs import AsyncVerbs
from fastnet.client import ClientBase
from fastnet.request import Request

if TYPE_CHECKING:
    from fastnet._internal._sync.map_calls import MapItem
    from fastnet.response import Response

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

    # -- lifecycle ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the client: new calls raise. When no other open client uses its connection pool, every
        connection in the pool is closed, in use or idle (as ``Client.close``)."""
        self._close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
