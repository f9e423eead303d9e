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

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Generator, Iterable
from typing import TYPE_CHECKING, Any

from fastnet._internal._async.bridge import AsyncBridgeInterceptor
from fastnet._internal._async.call_server import AsyncCallServerInterceptor
from fastnet._internal._async.chain import AsyncFunctionInterceptor, AsyncInternalInterceptor
from fastnet._internal._async.connect import AsyncConnectInterceptor
from fastnet._internal._async.map_calls import async_map_calls
from fastnet._internal._async.real_call import AsyncRealCall, new_async_call
from fastnet._internal._async.real_call import get as _get
from fastnet._internal._async.real_call import request as _request
from fastnet._internal._async.retry_follow_up import AsyncRetryAndFollowUpInterceptor
from fastnet._internal.call.factory import RequestFactory
from fastnet.client import BaseUrlDefaultHeadersInterceptor, ClientBase, DefaultHeadersInterceptor
from fastnet.request import Request
from fastnet.timeout import USE_CLIENT_DEFAULT

if TYPE_CHECKING:
    from fastnet._internal._sync.map_calls import MapItem
    from fastnet._internal.connection.connector import Connector
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.connection_pool import ConnectionPool
    from fastnet.dispatcher import Dispatcher
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.timeout import TimeoutTypes, UseClientDefault
    from fastnet.url import URL

__all__ = ["AsyncCall", "AsyncClient"]

#: ``client.new_call(request)`` returns one; ``await call.execute()`` it once, ``cancel()`` it from anywhere.
AsyncCall = AsyncRealCall


class _AsyncPolicy(AsyncInternalInterceptor):
    """Runs an interceptor that offers both forms (``fastnet.Retry``) through its ``aintercept``."""

    __slots__ = ("policy",)

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    async def intercept(self, chain: Any) -> Response:
        response: Response = await self.policy.aintercept(chain)
        return response

    def __repr__(self) -> str:
        return repr(self.policy)


def _async_interceptor(name: str, item: Any) -> Any:
    if callable(getattr(item, "aintercept", None)):
        return _AsyncPolicy(item)
    intercept = getattr(item, "intercept", None)
    if callable(intercept):
        if not inspect.iscoroutinefunction(intercept):
            raise TypeError(
                f"{name}: {item!r} has a blocking intercept(); fastnet.AsyncClient needs "
                "'async def intercept(self, chain)' that awaits chain.proceed(request)"
            )
        return item
    if callable(item):
        if not (inspect.iscoroutinefunction(item) or inspect.iscoroutinefunction(type(item).__call__)):
            raise TypeError(
                f"{name}: {item!r} is a blocking function; fastnet.AsyncClient needs an "
                "'async def' function taking the chain"
            )
        return AsyncFunctionInterceptor(item)
    raise TypeError(
        f"{name} entries must be Interceptors or async functions taking a chain, not {type(item).__name__}"
    )


class _AsyncDefaultHeaders(DefaultHeadersInterceptor):
    """``DefaultHeadersInterceptor`` for the asyncio chain."""

    __slots__ = ()

    async def intercept(self, chain: Any) -> Response:  # type: ignore[override]
        response: Response = await chain.proceed(self.apply(chain.request))
        return response


class _AsyncBaseUrlDefaultHeaders(BaseUrlDefaultHeadersInterceptor, _AsyncDefaultHeaders):
    """``BaseUrlDefaultHeadersInterceptor`` for the asyncio chain."""

    __slots__ = ()


class AsyncRequestFactory(RequestFactory):
    """The asyncio client's ``RequestFactory``: its calls are ``AsyncCall`` objects."""

    __slots__ = ()
    retry_interceptor = AsyncRetryAndFollowUpInterceptor

    async def asend(
        self,
        core: ClientCore,
        method: str,
        url: Any,
        headers: Any,
        body: Any,
        json: Any,
        proxy: Any,
        params: Any,
        data: Any,
        files: Any,
        auth: Any,
        timeout: Any,
        follow_redirects: bool | None,
        cookies: Any,
        stream: bool,
    ) -> Response:
        request = self.build(
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )
        call = new_async_call(self.core_for(core, request), request)
        response: Response = await call.execute()
        if not stream and response._source is not None:
            try:
                await response.aread()
            except BaseException:
                response.close()
                raise
        return response


class AsyncClient(ClientBase):
    """An asyncio HTTP client: ``Client``'s options and behaviour, with ``await``.

    >>> async with fastnet.AsyncClient() as client:
    ...     r = await client.get("http://127.0.0.1:8080/")

    ``with_options(**changes)`` makes a sibling sharing the pool, route database and DNS cache.
    """

    _request: Any

    # -- what differs from the blocking client ---------------------------------------------------

    def _choose_dispatcher(self, dispatcher: Dispatcher | None, shared: Any) -> None:
        if dispatcher is not None:
            raise TypeError("AsyncClient runs its calls on the event loop: it takes no dispatcher")
        return None

    def _real_pool(self, pool: ConnectionPool) -> Any:
        return pool._asyncio_real()

    def _new_factory(self, base_url: URL | None, params: str | None) -> RequestFactory:
        return AsyncRequestFactory(base_url, params)

    _default_headers = (_AsyncDefaultHeaders, _AsyncBaseUrlDefaultHeaders)

    def _interceptors(
        self, core: ClientCore, connector: Connector, app: Any, network: Any, defaults: Any
    ) -> list[Any]:
        return (
            ([defaults] if defaults is not None else [])
            + [_async_interceptor("interceptors", i) for i in app]
            + [
                AsyncRetryAndFollowUpInterceptor(core),
                AsyncBridgeInterceptor(core),
                AsyncConnectInterceptor(connector),
            ]
            + [_async_interceptor("network_interceptors", i) for i in network]
            + [AsyncCallServerInterceptor()]
        )

    def _bind(self, core: ClientCore) -> None:
        self._request = _request

    # -- calls ----------------------------------------------------------------------------------

    def new_call(self, request: Request) -> AsyncCall:
        """An ``AsyncCall`` for ``request``; ``await call.execute()`` runs it (once). The request's
        ``timeout``, ``follow_redirects`` and ``auth`` (an Authenticator) apply to this call."""
        if not isinstance(request, Request):
            raise TypeError(f"new_call() takes a fastnet.Request, not {type(request).__name__}")
        return new_async_call(self._factory.core_for(self._core, request), request)

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

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """Send a request and read the whole response body (``Client.request``'s options)."""
        return await self._send(
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    def stream(
        self,
        method: str,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> _Streaming:
        """Send a request whose body streams: ``async with client.stream(...) as response:`` closes it at
        the end of the block (``response = await client.stream(...)`` works too; then close it)."""
        return _Streaming(
            self._send(
                method,
                url,
                headers,
                body,
                json,
                proxy,
                params,
                data,
                files,
                auth,
                timeout,
                follow_redirects,
                cookies,
                True,
            )
        )

    async def _send(
        self,
        method: str,
        url: Any,
        headers: Any,
        body: Any,
        json: Any,
        proxy: Any,
        params: Any,
        data: Any,
        files: Any,
        auth: Any,
        timeout: Any,
        follow_redirects: Any,
        cookies: Any,
        stream: bool = False,
    ) -> Response:
        # one with options, or on a client with a base_url or params, goes to the factory (there)
        response: Response = await _request(
            self._core,
            method,
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
            stream,
        )
        return response

    async def get(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """A GET whose body is read."""
        response: Response = await _get(
            self._core, url, headers, proxy, params, auth, timeout, follow_redirects, cookies
        )
        return response

    async def head(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "HEAD",
            url,
            headers,
            None,
            None,
            proxy,
            params,
            None,
            None,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    async def options(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "OPTIONS",
            url,
            headers,
            None,
            None,
            proxy,
            params,
            None,
            None,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    async def delete(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "DELETE",
            url,
            headers,
            body,
            json,
            proxy,
            params,
            None,
            None,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    async def post(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "POST",
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    async def put(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "PUT",
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
        )

    async def patch(
        self,
        url: str | URL,
        *,
        params: Any = None,
        headers: HeadersLike | None = None,
        cookies: Any = None,
        body: BodyLike | None = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        auth: Any = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await self._send(
            "PATCH",
            url,
            headers,
            body,
            json,
            proxy,
            params,
            data,
            files,
            auth,
            timeout,
            follow_redirects,
            cookies,
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

    def __init__(self, pending: Any) -> None:
        self._pending = pending
        self._response: Response | None = None

    def __await__(self) -> Generator[Any, None, Response]:
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
