"""The ``Interceptor`` and ``Chain`` protocols.

An interceptor observes, changes, short-circuits or repeats calls. Application interceptors
(``Client(interceptors=[...])``) see each call once, before retries and redirects; network interceptors
(``network_interceptors=``) see every request that goes on the wire, with its connection, and must call
``proceed`` exactly once without changing host or port. A plain function ``f(chain) -> Response`` is
accepted wherever an interceptor is.

>>> def add_trace(chain: fastnet.Chain) -> fastnet.Response:
...     request = chain.request.replace(headers=chain.request.headers.add("X-Trace", "1"))
...     return chain.proceed(request)
>>> client = fastnet.Client(interceptors=[add_trace])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from fastnet._internal._sync.real_call import RealCall
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet.request import Request
    from fastnet.response import Response

__all__ = ["Chain", "Interceptor"]


@runtime_checkable
class Chain(Protocol):
    """What an interceptor gets: the request so far, ``proceed``, the call and (for network
    interceptors) the connection, plus this call's timeouts."""

    request: Request
    call: RealCall
    connect_timeout: float
    read_timeout: float
    write_timeout: float

    def proceed(self, request: Request) -> Response: ...

    @property
    def connection(self) -> RealConnection | None: ...

    def with_connect_timeout(self, seconds: float | None) -> Chain: ...
    def with_read_timeout(self, seconds: float | None) -> Chain: ...
    def with_write_timeout(self, seconds: float | None) -> Chain: ...


@runtime_checkable
class Interceptor(Protocol):
    """``intercept(chain) -> Response``."""

    def intercept(self, chain: Any) -> Response: ...
