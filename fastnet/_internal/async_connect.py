"""The connect interceptor: a connection for the request (pooled, else new) and an exchange on it.

Everything below this interceptor in the chain (network interceptors, CallServer) has a connection:
``chain.exchange`` is set, and ``chain.connection`` is the ``RealConnection``. Finding the connection is
the exchange finder's job (``connection/exchange_finder.py``): the pool first, then routes. The layers
below know the address, not the request: a DNS, connect, proxy or TLS failure gets this hop's URL here.

.. async-only
``AsyncConnectInterceptor`` is the asyncio client's. This file is also the source of the blocking
``ConnectInterceptor`` (``_connect_py.py``, compiled as ``_connect_c``): ``scripts/unasync.py`` writes it
from this one. Edit this file, then run the script.
.. end
.. sync-only
``ConnectInterceptor`` is the blocking client's: the pure-Python twin of the compiled ``_connect_c`` (import
both through ``fastnet._internal.connect``), written by ``scripts/unasync.py`` from ``async_connect.py``.
Edit that file, then run the script.
.. end
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet._internal.async_chain import AsyncInternalInterceptor
from fastnet._internal.connection.async_exchange_finder import find_connection
from fastnet._internal.http1.async_exchange import new_async_exchange
from fastnet.exceptions import NetworkError

if TYPE_CHECKING:
    from fastnet._internal.async_chain import AsyncRealInterceptorChain
    from fastnet._internal.connection.connector import Connector
    from fastnet.response import Response

__all__ = ["AsyncConnectInterceptor"]


class AsyncConnectInterceptor(AsyncInternalInterceptor):
    """Finds a connection for the request (pool first, then a new route) and opens an exchange on it."""

    __slots__ = ("connector",)
    connector: Connector

    def __init__(self, connector: Connector) -> None:
        self.connector = connector

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        call = chain.call
        request = chain.request
        previous = call.exchange
        if previous is not None and not previous.done:
            raise RuntimeError(
                "cannot make a new request because the previous response is still open: "
                "please call response.close()"
            )
        try:
            connection = await find_connection(
                self.connector, call, request, chain.connect_timeout, chain.read_timeout
            )
        except NetworkError as exc:
            exc._locate(request.url, None)  # this hop's URL (a redirect's, not the call's first)
            raise
        exchange = new_async_exchange(call, connection, request)
        call.exchange = exchange
        connection.set_timeouts(chain.read_timeout, chain.write_timeout)
        return await chain.copy(chain.index, request, exchange).proceed(request)
