"""``ConnectionUser``: what the connection layer needs to know about the call it works for.

The exchange and the exchange finder sit below the call in the layering, so they never import it.
Instead ``RealCall`` and the asyncio call subclass this class (through ``CallState``, which implements
its methods for both): the lower layers read its cancellation
flags, deadline, limits and event listener, and report back through its methods. The built-in
interceptors see the call the same way, so nothing below ``RealCall`` imports it.

How a call holds its connection (OkHttp's rules, which fix the event order):

* ``connection`` is the connection the call holds. It is set when the exchange finder hands one out
  (``connection_acquired``) and kept across follow-ups: a redirect to the same address runs on it
  without a new acquire. It goes back (``connection_released``) when the call ends, when the next hop
  needs a connection to another address, or when a failed exchange is given up on (after
  ``retry_decision``).
* ``exchange_done`` is the exchange's report that its response body ended (or was abandoned):
  ``reusable`` says whether the connection may carry another exchange.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fastnet._internal._async.exchange import AsyncExchange
    from fastnet._internal._sync.exchange import Exchange
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet.events import EventListener
    from fastnet.exceptions import NetworkError
    from fastnet.request import Request
    from fastnet.route import Route

    class Finder(Protocol):
        """A call hop's ``ExchangeFinder`` (or ``AsyncExchangeFinder``, whose other methods are awaited), as
        the call holds it: what aborts the connecting in flight."""

        def cancel(self) -> None: ...


__all__ = ["ConnectionUser"]


class ConnectionUser:
    """The call as the connection layer sees it (``CallState`` implements the methods)."""

    __slots__ = (
        "events",
        "canceled",
        "timed_out",
        "deadline",
        "max_body_size",
        "connection",
        "reusable",
        "finder",
        "exchange",
        "last_failure",
        "retry_route",
        "started_at",
        "queued",
    )
    events: EventListener | None  # the call's EventListener, or None when no listener is configured
    canceled: bool
    timed_out: bool  # canceled by the call timeout (the error is CallTimeout, not CanceledError)
    deadline: float  # time.monotonic() by which the whole call must end; 0 for no call timeout
    max_body_size: int  # the largest body (decoded) that reading a whole response accepts; 0: no limit
    connection: RealConnection | None  # the connection the call holds now (cancel() shuts it down)
    reusable: bool  # the held connection may carry the next exchange (its last response ended cleanly)
    # the ExchangeFinder (or AsyncExchangeFinder: an unrelated class whose find() is awaited) of this hop,
    # if a connection had to be opened (cancel() aborts it)
    finder: Finder | None
    exchange: Exchange | AsyncExchange | None  # the exchange in progress, if any
    # (connection, was_fresh) of the last exchange that failed on I/O: what recover() decides from
    last_failure: tuple[RealConnection, bool] | None
    retry_route: Route | None  # after a stale pooled connection failed: reconnect on this route first
    started_at: float  # monotonic time the call started executing (for response.timings)
    queued: float  # seconds the call waited in a dispatcher before it started

    def canceled_error(self, request: Request) -> NetworkError:
        """The error a canceled call ends with: CallTimeout or CanceledError."""
        raise NotImplementedError

    def exchange_done(self, conn: RealConnection, reusable: bool) -> None:
        """The exchange on ``conn`` ended: its body was read to the end, or abandoned."""
        raise NotImplementedError

    def body_failed(self, exc: NetworkError, conn: RealConnection) -> None:
        """Reading the response body on ``conn`` failed: the call fails with ``exc``."""
        raise NotImplementedError

    def exchange_failed(self, exc: NetworkError, exchange: Exchange | AsyncExchange) -> None:
        """Writing the request or reading the response head failed on I/O: the connection is done for
        (it stays held until the retry decision has been made)."""
        raise NotImplementedError

    def release_connection(self) -> None:
        """Give the held connection back (to the pool when reusable, else closed): ``connection_released``."""
        raise NotImplementedError
