"""``CallState``: what the blocking ``RealCall`` and the asyncio ``AsyncRealCall`` keep and report alike.

Both calls have one source, ``_async/real_call.py`` (``scripts/unasync.py`` writes the blocking one from
it); what they do the same way and never wait in lives here, compiled, so the asyncio call (plain Python)
runs it as C too: the fields (those each engine's ``io.py`` keeps on the call among them: setting them
here costs a new call no Python), and the ``ConnectionUser`` bookkeeping the exchange and the exchange
finder report to (which connection the call holds, when it is released, the retry memory).

The call holds one connection at a time (``ConnectionUser`` has the rules): kept across follow-ups to
the same address, released when the call ends, when the next hop goes elsewhere, or, after an exchange
failed, once the retry decision has been made. ``end()`` and ``fail()`` are each call's own (they stop
its call timeout), called from here when the response the caller holds is complete or its body fails.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet._internal.connection.connection_user import ConnectionUser
from fastnet.exceptions import CallTimeout, CanceledError

if TYPE_CHECKING:
    import asyncio
    import threading

    from fastnet._internal._async.exchange import AsyncExchange
    from fastnet._internal._sync.exchange import Exchange
    from fastnet._internal._sync.real_connection import RealConnection
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.exceptions import NetworkError
    from fastnet.request import Request

__all__ = ["CallState", "init_state"]


class CallState(ConnectionUser):
    """One request's lifetime, as far as the two engines keep it alike (the calls subclass it)."""

    __slots__ = (
        "client",
        "request",
        "executed",
        "finished",
        "returned",
        "wakeup",
        "loop",
        "thread",
        "task",
        "timer",
        "interrupting",
        "__weakref__",
    )
    client: ClientCore
    request: Request
    executed: bool
    finished: bool  # call_end or call_failed has been reported
    returned: bool  # execute() returned a response (its body may still be streaming)
    # What each engine's io backend keeps on the call (set here, so that a new call costs no Python):
    wakeup: threading.Event | None  # blocking: set by cancel() to cut a backoff sleep short
    loop: asyncio.AbstractEventLoop | None  # asyncio: the loop execute() runs on
    thread: int  # asyncio: that loop's thread
    task: asyncio.Task[object] | None  # asyncio: the task awaiting execute(), while it runs (the caller's)
    timer: asyncio.TimerHandle | None  # asyncio: the call timeout
    interrupting: bool  # asyncio: cancel() canceled ``task``: its CancelledError becomes CanceledError

    @property
    def is_executed(self) -> bool:
        return self.executed

    @property
    def is_canceled(self) -> bool:
        return self.canceled

    def canceled_error(self, request: Request) -> NetworkError:
        if self.timed_out:
            return CallTimeout("call timeout", url=request.url)
        return CanceledError("Canceled", url=request.url)

    def exchange_failed(self, exc: NetworkError, exchange: Exchange | AsyncExchange) -> None:
        """An I/O failure on an exchange: the connection is done for; remember it for recover(). The call
        keeps holding it until RetryAndFollowUp has decided (then ``release_connection``)."""
        conn = exchange.connection
        was_fresh = conn.exchange_count == 0
        conn.no_new_exchanges = True
        if self.events is not None:
            self.events.response_failed(self, exc)
        if was_fresh and conn.route is not None:
            # a fresh connection that failed its first exchange: its route is remembered as failed
            self.client.connector.record_failure(conn.route, exc)
        elif not was_fresh:
            self.retry_route = conn.route  # a stale pooled connection: reconnect on the same route
        self.last_failure = (conn, was_fresh)
        exchange.done = True
        self.exchange = None
        self.reusable = False

    def exchange_done(self, conn: RealConnection, reusable: bool) -> None:
        exchange = self.exchange
        if exchange is not None and exchange.connection is conn:
            self.exchange = None
        self.reusable = reusable
        if self.returned:
            self.end()  # the response the caller holds is complete: the call is over
        # else a follow-up may run on it; the next hop releases it if not (after its follow-up decision)

    def body_failed(self, exc: NetworkError, conn: RealConnection) -> None:
        if self.events is not None:
            self.events.response_failed(self, exc)
        exchange = self.exchange
        if exchange is not None and exchange.connection is conn:
            self.exchange = None
        self.reusable = False
        self.fail(exc)

    def release_connection(self) -> None:
        conn = self.connection
        if conn is None:
            return
        self.connection = None
        # Never pool the connection of a canceled call: cancel() sets `canceled` and then reads
        # `connection`, this sets `connection` and then reads `canceled`, so either cancel() saw None
        # or this sees the cancel, and a socket cancel() shuts down never reaches another call.
        reusable = self.reusable and not self.canceled
        self.reusable = False
        if not reusable:
            conn.no_new_exchanges = True
        if self.events is not None:
            self.events.connection_released(self, conn)
        self.client.pool.release(conn, reusable)

    def end(self) -> None:
        """The call is over (its response complete): release the connection, ``call_end``."""
        raise NotImplementedError

    def fail(self, exc: BaseException) -> None:
        """The call failed with ``exc``: release the connection, ``call_failed``."""
        raise NotImplementedError


def init_state(call: CallState, client: ClientCore, request: Request) -> None:
    """Set every field of a new call but those of its engine (the per-request path: no ``__init__``)."""
    call.client = client
    call.request = request
    call.executed = False
    call.canceled = False
    call.timed_out = False
    call.connection = None
    call.reusable = False
    call.exchange = None
    call.finder = None
    call.last_failure = None
    call.retry_route = None
    call.started_at = 0.0
    call.queued = 0.0
    call.max_body_size = client.max_body_size
    call.deadline = 0.0
    call.finished = False
    call.returned = False
    call.wakeup = None
    call.loop = None
    call.thread = 0
    call.task = None
    call.timer = None
    call.interrupting = False
    call.events = client.new_events(call)
