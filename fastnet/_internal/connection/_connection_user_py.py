"""``ConnectionUser``: what the connection layer needs to know about the call it works for.

The exchange and the exchange finder sit below the call in the layering, so they never import it.
Instead ``RealCall`` (and the asyncio call) subclasses this class: the lower layers read its cancellation
flags, deadline and event listener, and report back through its methods. The built-in interceptors see the
call the same way, so nothing below ``RealCall`` imports it. This is OkHttp 5's
``ConnectionUser`` in spirit: the dependency points down, the implementation lives above.

Pure-Python twin of the compiled ``_connection_user_c``; import both through
``fastnet._internal.connection.connection_user``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastnet._internal.connection.real_connection import RealConnection
    from fastnet._internal.http1.exchange import Exchange
    from fastnet.exceptions import NetworkError
    from fastnet.request import Request

__all__ = ["ConnectionUser"]


class ConnectionUser:
    """The call as the connection layer sees it (RealCall implements the methods)."""

    __slots__ = (
        "events",
        "canceled",
        "timed_out",
        "deadline",
        "connection",
        "finder",
        "exchange",
        "last_failure",
    )
    events: Any  # the call's EventListener, or None when no listener is configured
    canceled: bool
    timed_out: bool  # canceled by the call timeout (the error is CallTimeout, not CanceledError)
    deadline: float  # time.monotonic() by which the whole call must end; 0 for no call timeout
    connection: RealConnection | None  # the connection the call holds now (cancel() shuts it down)
    finder: Any  # the ExchangeFinder of this hop, if a connection had to be opened (cancel() aborts it)
    exchange: Any  # the Exchange in progress, if any
    # (connection, was_fresh) of the last exchange that failed on I/O: what recover() decides from
    last_failure: tuple[RealConnection, bool] | None

    def canceled_error(self, request: Request) -> NetworkError:
        """The error a canceled call ends with: CallTimeout or CanceledError."""
        raise NotImplementedError

    def body_failed(self, exc: NetworkError) -> None:
        """Reading the response body failed: the call fails with ``exc``."""
        raise NotImplementedError

    def release_connection(self, conn: RealConnection, reusable: bool) -> None:
        """The exchange on ``conn`` is over: back to its pool when ``reusable``, else closed."""
        raise NotImplementedError

    def exchange_failed(self, exc: NetworkError, exchange: Exchange) -> None:
        """Writing the request or reading the response head failed on I/O: the connection is done for."""
        raise NotImplementedError
