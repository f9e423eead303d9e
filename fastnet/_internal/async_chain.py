"""The interceptor chain: the ``Chain`` each interceptor receives, and how ``proceed`` runs the next one.

.. async-only
``AsyncRealInterceptorChain`` is the asyncio client's (``await chain.proceed(request)``, interceptors
with ``async def intercept(chain)``). This file is also the source of the blocking
``RealInterceptorChain`` (``_chain_py.py``, compiled as ``_chain_c``): ``scripts/unasync.py`` writes
it from this one. Edit this file, then run the script.
.. end
.. sync-only
``RealInterceptorChain`` is the blocking client's: the pure-Python twin of the compiled ``_chain_c``
(import both through ``fastnet._internal.chain``), written by ``scripts/unasync.py`` from
``async_chain.py``. Edit that file, then run the script.
.. end

Theory of operation
-------------------
A call runs through a list of interceptors (application ones, RetryAndFollowUp, Bridge, Connect, network
ones, CallServer); each gets a chain and returns a ``Response``. The chain object is copied per hop
(a typed object of ten fields), which is what lets application interceptors call ``proceed`` any number
of times and lets us check that network interceptors call it exactly once without changing host or port.

Interceptors that subclass ``InternalInterceptor`` (the four built-ins and ``FunctionInterceptor``, which
adapts a plain function) are called through their C method table in the compiled build; any other object
with ``intercept(chain)`` is called as Python.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastnet._internal.timeouts import timeout_seconds

if TYPE_CHECKING:
    from fastnet._internal.connection.async_real_connection import AsyncRealConnection
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet._internal.http1.async_exchange import AsyncExchange
    from fastnet.request import Request
    from fastnet.response import Response

__all__ = [
    "AsyncFunctionInterceptor",
    "AsyncInternalInterceptor",
    "AsyncRealInterceptorChain",
    "first_async_chain",
]


class AsyncInternalInterceptor:
    """The base of the interceptors the chain calls directly: the built-ins and ``FunctionInterceptor``."""

    __slots__ = ()

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        raise NotImplementedError


class AsyncFunctionInterceptor(AsyncInternalInterceptor):
    """Adapts a plain function ``f(chain) -> Response`` to the Interceptor protocol."""

    __slots__ = ("function",)
    function: Callable[[AsyncRealInterceptorChain], Awaitable[Response]]

    def __init__(self, function: Callable[[AsyncRealInterceptorChain], Awaitable[Response]]) -> None:
        self.function = function

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        return await self.function(chain)

    def __repr__(self) -> str:
        return f"<interceptor {getattr(self.function, '__qualname__', self.function)!r}>"


class AsyncRealInterceptorChain:
    """The ``Chain`` an interceptor receives: the request, ``proceed``, the call, the connection
    (None above ConnectInterceptor) and this call's timeouts, which application interceptors can change
    with ``with_read_timeout(s)`` and friends."""

    __slots__ = (
        "call",
        "interceptors",
        "index",
        "request",
        "exchange",
        "connect_timeout",
        "read_timeout",
        "write_timeout",
        "calls",
        "follow_redirects",
    )
    call: ConnectionUser  # the RealCall
    interceptors: list[Any]
    index: int
    request: Request
    exchange: AsyncExchange | None  # set below ConnectInterceptor: network interceptors and CallServer
    connect_timeout: float
    read_timeout: float
    write_timeout: float
    calls: int  # how many times proceed() was called on this chain
    follow_redirects: int  # -1: the client's setting; 0/1 set by with_follow_redirects()

    def copy(self, index: int, request: Request, exchange: AsyncExchange | None) -> AsyncRealInterceptorChain:
        chain = AsyncRealInterceptorChain.__new__(AsyncRealInterceptorChain)
        chain.call = self.call
        chain.interceptors = self.interceptors
        chain.index = index
        chain.request = request
        chain.exchange = exchange
        chain.connect_timeout = self.connect_timeout
        chain.read_timeout = self.read_timeout
        chain.write_timeout = self.write_timeout
        chain.calls = 0
        chain.follow_redirects = self.follow_redirects
        return chain

    async def proceed(self, request: Request) -> Response:
        """Hand ``request`` to the next interceptor and return its response."""
        interceptors = self.interceptors
        index = self.index
        if index >= len(interceptors):
            raise RuntimeError("proceed() called past the end of the interceptor chain")
        self.calls += 1
        exchange = self.exchange
        if exchange is not None:
            previous = interceptors[index - 1]
            if self.calls > 1:
                raise RuntimeError(f"network interceptor {previous!r} must call proceed() exactly once")
            url = request.url
            current = exchange.connection.address
            if url.host != current.host or url.port != current.port:
                raise RuntimeError(f"network interceptor {previous!r} must retain the same host and port")
        nxt = self.copy(index + 1, request, exchange)
        interceptor = interceptors[index]
        if isinstance(interceptor, AsyncInternalInterceptor):
            internal = interceptor
            response = await internal.intercept(nxt)
        else:
            response = await interceptor.intercept(nxt)
        if response is None:
            raise RuntimeError(f"interceptor {interceptor!r} returned None")
        if exchange is not None and index + 1 < len(interceptors) and nxt.calls != 1:
            raise RuntimeError(f"network interceptor {interceptor!r} must call proceed() exactly once")
        result: Response = response
        return result

    @property
    def connection(self) -> AsyncRealConnection | None:
        exchange = self.exchange
        return exchange.connection if exchange is not None else None

    def _adjust(self, name: str, seconds: float | None) -> AsyncRealInterceptorChain:
        if self.exchange is not None:
            raise RuntimeError("Timeouts can't be adjusted in a network interceptor")
        value = timeout_seconds(name, seconds)
        chain = self.copy(self.index, self.request, None)
        if name == "connect_timeout":
            chain.connect_timeout = value
        elif name == "read_timeout":
            chain.read_timeout = value
        else:
            chain.write_timeout = value
        return chain

    def with_connect_timeout(self, seconds: float | None) -> AsyncRealInterceptorChain:
        return self._adjust("connect_timeout", seconds)

    def with_read_timeout(self, seconds: float | None) -> AsyncRealInterceptorChain:
        return self._adjust("read_timeout", seconds)

    def with_write_timeout(self, seconds: float | None) -> AsyncRealInterceptorChain:
        return self._adjust("write_timeout", seconds)

    def with_follow_redirects(self, follow: bool) -> AsyncRealInterceptorChain:
        """A chain whose calls follow redirects (or not) whatever the client's setting is."""
        if self.exchange is not None:
            raise RuntimeError("follow_redirects can't be adjusted in a network interceptor")
        chain = self.copy(self.index, self.request, None)
        chain.follow_redirects = 1 if follow else 0
        return chain

    def __repr__(self) -> str:
        return f"<Chain {self.index} {self.request!r}>"


def first_async_chain(
    call: ConnectionUser,
    interceptors: list[Any],
    request: Request,
    connect_timeout: float,
    read_timeout: float,
    write_timeout: float,
) -> AsyncRealInterceptorChain:
    """The chain a call starts with: at the first interceptor, the client's timeouts."""
    chain = AsyncRealInterceptorChain.__new__(AsyncRealInterceptorChain)
    chain.call = call
    chain.interceptors = interceptors
    chain.index = 0
    chain.request = request
    chain.exchange = None
    chain.connect_timeout = connect_timeout
    chain.read_timeout = read_timeout
    chain.write_timeout = write_timeout
    chain.calls = 0
    chain.follow_redirects = -1
    return chain
