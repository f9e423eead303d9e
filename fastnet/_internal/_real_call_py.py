"""``RealCall``: one request's lifetime, and the entry points that make one.

Theory of operation
-------------------
``execute()`` runs once, on the caller's thread: the client's dispatcher counts it among its running
calls until it returns (unless nobody can see that dispatcher: ``fastnet.dispatcher`` has the rule). It
starts the call timeout (the process's watchdog cancels the call when it passes), builds the first
chain and proceeds. The response it returns may still stream its body; the
call ends (``connection_released``, then ``call_end``) when that body is read to the end or closed, or
at once for a body-less response. Every failure ends the call with ``call_failed`` exactly once.

The call holds one connection at a time (``ConnectionUser`` has the rules): kept across follow-ups to
the same address, released when the call ends, when the next hop goes elsewhere, or, after an exchange
failed, once the retry decision has been made.

``cancel()`` may come from any thread: it marks the call, wakes a backoff sleep, shuts down the
connection the call holds (so a blocked read or write fails at once) and aborts a connect in flight.

A RealCall is the ``ConnectionUser`` of the layers below it: the exchange and the exchange finder read
its flags and report back through ``release_connection``, ``body_failed`` and ``exchange_failed``.

``request()`` and ``get()`` are what ``Client.request`` and ``Client.get`` run: they build the Request
(the URL parsed once and cached), make the call, execute it and read the body unless asked to stream.
A request with requests'/httpx's options (``params``, ``data``, ``files``, ``auth``, ``timeout``,
``follow_redirects``, ``cookies``), or any request of a client with a ``base_url`` or default ``params``,
is built by the client's ``RequestFactory`` instead (``client.factory``), which also picks the core the
call runs on (its per-call settings); a GET without any of them costs what it always did. Their keywords
are the verbs', in the verbs' order.

Pure-Python twin of the compiled ``_real_call_c``; import both through ``fastnet._internal.real_call``.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from fastnet._internal.chain import first_chain
from fastnet._internal.client_core import watchdog
from fastnet._internal.clock import monotonic
from fastnet._internal.connection.connection_user import ConnectionUser
from fastnet.exceptions import CallTimeout, CanceledError, NetworkError, PoolTimeout
from fastnet.headers import EMPTY_HEADERS
from fastnet.proxy import Proxy
from fastnet.request import KNOWN_METHODS, Request, make_request, proxy_from_url
from fastnet.timeout import USE_CLIENT_DEFAULT
from fastnet.url import URL
from fastnet.url import _cache as _URL_CACHE

if TYPE_CHECKING:
    from fastnet._internal.client_core import ClientCore
    from fastnet._internal.connection.real_connection import RealConnection
    from fastnet._internal.http1.async_exchange import AsyncExchange
    from fastnet._internal.http1.exchange import Exchange
    from fastnet.headers import HeadersLike
    from fastnet.request import BodyLike
    from fastnet.response import Response

__all__ = ["RealCall", "get", "new_call", "request"]


class RealCall(ConnectionUser):
    """One request's lifetime: ``execute()`` once, ``cancel()`` from any thread."""

    __slots__ = ("client", "request", "executed", "finished", "returned", "wakeup", "__weakref__")
    client: ClientCore
    request: Request
    executed: bool
    finished: bool  # call_end or call_failed has been reported
    returned: bool  # execute() returned a response (its body may still be streaming)
    wakeup: threading.Event | None  # set by cancel() to cut a backoff sleep short

    def __init__(self, client: ClientCore, request: Request) -> None:
        _init_call(self, client, request)

    @property
    def is_executed(self) -> bool:
        return self.executed

    @property
    def is_canceled(self) -> bool:
        return self.canceled

    def execute(self) -> Response:
        """Run the call through the interceptor chain on this thread; returns a response whose body may
        stream. A call runs once: ``execute()`` or ``enqueue()``."""
        if self.executed:
            raise RuntimeError("Already Executed")
        self.executed = True
        dispatcher = self.client.sync_dispatcher
        if dispatcher is None:  # nobody can see the client's dispatcher: nothing to tell it
            return self.run()
        running: dict[RealCall, None] = dispatcher._running_sync  # its lock guards none of the steps
        running[self] = None
        try:
            return self.run()
        finally:
            if dispatcher.idle_callback is None:
                running.pop(self, None)
            else:  # whether this made it idle is decided under its lock
                dispatcher._sync_finished(self)

    def enqueue(self, callback: Any = None, *, stream: bool = False) -> Future[Response]:
        """Run the call on the client's dispatcher; returns a ``concurrent.futures.Future`` of the response.

        ``callback`` (optional) has ``on_response(call, response)`` and ``on_failure(call, error)``, run on
        the dispatcher's thread before the future resolves. The body is read before either, unless
        ``stream=True``: then the callback (or whoever takes the future's result) must close it.
        """
        if self.executed:
            raise RuntimeError("Already Executed")
        self.executed = True
        future: Future[Response] = self.client.dispatcher.enqueue(self, callback, stream)
        return future

    def run(self) -> Response:
        """The work of ``execute()``, for a call already marked as executed (the dispatcher runs this)."""
        client = self.client
        if client.closed:
            raise RuntimeError("the client is closed: make a new fastnet.Client")
        events = self.events
        self.started_at = started = monotonic()
        if client.call_timeout > 0:
            self.deadline = started + client.call_timeout
            watchdog().watch(self)
        if events is not None:
            events.call_start(self)
        request = self.request
        try:
            if self.canceled:
                raise self.canceled_error(request)
            chain = first_chain(
                self,
                client.interceptors,
                request,
                client.connect_timeout,
                client.read_timeout,
                client.write_timeout,
            )
            response = chain.proceed(request)
            if self.canceled:
                response.close()
                raise self.canceled_error(request)
        except BaseException as exc:
            self.fail(exc)
            if isinstance(exc, OSError):  # a NetworkError, or a socket call cancel() cut short
                # a canceled call ends with CanceledError, or CallTimeout when the watchdog canceled it
                # (the layers below raise CanceledError for both)
                if self.canceled and not isinstance(
                    exc, (CallTimeout if self.timed_out else CanceledError, PoolTimeout)
                ):
                    raise self.canceled_error(request) from exc
                if isinstance(exc, NetworkError):
                    exc._locate(request.url, None)
            raise
        self.returned = True
        if response._source is None:
            self.end()
        return response

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (for backoff); ``cancel()`` and the call timeout cut it short with an error."""
        if self.canceled:
            raise self.canceled_error(self.request)
        if seconds > 0:
            if self.deadline > 0 and time.monotonic() + seconds > self.deadline:
                seconds = max(0.0, self.deadline - time.monotonic()) + 0.05
            wakeup = self.wakeup
            if wakeup is None:
                wakeup = self.wakeup = threading.Event()
            if self.canceled:
                raise self.canceled_error(self.request)
            wakeup.wait(seconds)
        if self.canceled:
            raise self.canceled_error(self.request)

    def canceled_error(self, request: Request) -> NetworkError:
        if self.timed_out:
            return CallTimeout("call timeout", url=request.url)
        return CanceledError("Canceled", url=request.url)

    def cancel(self) -> None:
        """Cancel the call: closes its socket so a blocked read or write fails with CanceledError."""
        if self.canceled:
            return
        self.canceled = True
        wakeup = self.wakeup
        if wakeup is not None:
            wakeup.set()
        if self.events is not None:
            self.events.canceled(self)
        conn = self.connection
        if conn is not None:
            conn.shutdown()
        finder = self.finder
        if finder is not None:
            finder.cancel()

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
        self.finder = None  # the finder points back at this call: no cycle left for the collector
        if self.connection is not None:
            self.release_connection()
        if self.finished:
            return
        self.finished = True
        if self.deadline > 0:
            self.deadline = -1.0
        if self.events is not None:
            self.events.call_end(self)

    def fail(self, exc: BaseException) -> None:
        self.finder = None
        if self.connection is not None:
            # reusable only if its last exchange ended cleanly (a failure on it already said otherwise)
            self.release_connection()
        if self.finished:
            return
        self.finished = True
        if self.deadline > 0:
            self.deadline = -1.0
        if self.events is not None:
            self.events.call_failed(self, exc)

    def clone(self) -> RealCall:
        return RealCall(self.client, self.request)

    def __repr__(self) -> str:
        return f"<Call {self.request.method} {self.request.url.redacted()}>"


def _init_call(call: RealCall, client: ClientCore, request: Request) -> None:
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
    call.events = client.new_events(call)


def new_call(client: ClientCore, request: Request) -> RealCall:
    """A RealCall without ``__init__`` argument parsing (the per-request path)."""
    call = RealCall.__new__(RealCall)
    _init_call(call, client, request)
    return call


def request(
    client: ClientCore,
    method: str,
    url: str | URL,
    params: object = None,
    headers: HeadersLike | None = None,
    cookies: object = None,
    body: BodyLike | None = None,
    data: object = None,
    files: object = None,
    json: object = None,
    auth: object = None,
    timeout: object = USE_CLIENT_DEFAULT,
    follow_redirects: bool | None = None,
    proxy: Proxy | str | None = None,
    stream: bool = False,
) -> Response:
    """Build, execute and (unless ``stream``) read a request: what ``Client.request`` runs, its keywords
    in the verbs' order. A request with options, or on a client with a ``base_url`` or ``params``, is
    built by the client's factory, which also picks the core its call runs on."""
    req = None
    if (
        client.factory_builds
        or params is not None
        or data is not None
        or files is not None
        or auth is not None
        or timeout is not USE_CLIENT_DEFAULT
        or follow_redirects is not None
        or cookies is not None
    ):
        factory = client.factory
        req = factory.build(
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
        )
        call = new_call(factory.core_for(client, req), req)
    else:
        # a str subclass (an enum.StrEnum member) takes the long way: Request makes it a plain str
        if (
            headers is None
            and body is None
            and json is None
            and type(method) is str
            and method in KNOWN_METHODS
        ):
            cache = _URL_CACHE
            cached = cache.get(url) if isinstance(url, str) else None
            if cached is not None:  # a cached URL carries no credentials
                if proxy is not None and not isinstance(proxy, Proxy):
                    proxy = proxy_from_url(proxy)
                req = make_request(method, cached, EMPTY_HEADERS, None, proxy, None)
        if req is None:
            req = Request(method, url, headers, body, json, proxy)
        call = new_call(client, req)
    response = call.execute()
    if not stream and response._source is not None:
        try:
            response.read()
        except BaseException:
            response.close()
            raise
    return response


def get(
    client: ClientCore,
    url: str | URL,
    params: object = None,
    headers: HeadersLike | None = None,
    cookies: object = None,
    auth: object = None,
    timeout: object = USE_CLIENT_DEFAULT,
    follow_redirects: bool | None = None,
    proxy: Proxy | str | None = None,
) -> Response:
    """``Client.get``: a GET whose body is read."""
    if (
        headers is None
        and proxy is None
        and params is None
        and auth is None
        and timeout is USE_CLIENT_DEFAULT
        and follow_redirects is None
        and cookies is None
        and not client.factory_builds
        and isinstance(url, str)
    ):
        cache = _URL_CACHE
        cached = cache.get(url)
        if cached is not None:  # the keep-alive GET: a cached URL (no credentials), no options
            call = new_call(client, make_request("GET", cached, EMPTY_HEADERS, None, None, None))
            response = call.execute()
            if response._source is not None:
                try:
                    response.read()
                except BaseException:
                    response.close()
                    raise
            return response
    return request(
        client,
        "GET",
        url,
        params=params,
        headers=headers,
        cookies=cookies,
        auth=auth,
        timeout=timeout,
        follow_redirects=follow_redirects,
        proxy=proxy,
    )
