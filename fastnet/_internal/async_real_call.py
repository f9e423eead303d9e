"""``AsyncRealCall``: one request's lifetime on the asyncio client, and the entry points that make one.

It is a ``RealCall`` (the same ``ConnectionUser`` bookkeeping: which connection the call holds, when it
is released, the event order, the retry memory) whose ``execute`` runs the asyncio chain on the running
event loop. What differs is how a call is interrupted:

* the call timeout is a timer on the loop (``loop.call_later``), not the blocking client's watchdog
  thread; when it fires the call is canceled as ``cancel()`` would, and fails with ``CallTimeout``;
* ``cancel()`` (from the loop's thread, or any other: it then hops onto the loop) marks the call, aborts
  the connection it holds (a read or write waiting on it fails at once), aborts a connect in flight, and,
  while ``execute()`` is still running, cancels the task that awaits it, so no await (a DNS lookup, a
  pool slot, a backoff, a user's interceptor) outlives it. That task cancellation is taken back
  (``uncancel``) and the call fails with ``CanceledError``: the caller's own task is not left canceled;
* a task canceled by its owner (``task.cancel()``, ``asyncio.timeout``) propagates ``CancelledError``
  as asyncio code expects, after the call has failed and given its connection back.

Plain Python in both builds; the per-request work it drives is the compiled or pure engine's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from fastnet._internal.async_chain import first_async_chain
from fastnet._internal.clock import monotonic
from fastnet._internal.real_call import RealCall
from fastnet.exceptions import CallTimeout, CanceledError, NetworkError, PoolTimeout
from fastnet.headers import EMPTY_HEADERS
from fastnet.proxy import Proxy
from fastnet.request import KNOWN_METHODS, Request, make_request, proxy_from_url
from fastnet.timeout import USE_CLIENT_DEFAULT
from fastnet.url import _cache as _URL_CACHE

if TYPE_CHECKING:
    from fastnet._internal.client_core import ClientCore
    from fastnet.headers import HeadersLike
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.url import URL

__all__ = ["AsyncRealCall", "get", "new_async_call", "request"]


class AsyncRealCall(RealCall):
    """One request's lifetime on the event loop: ``await execute()`` once, ``cancel()`` from anywhere."""

    __slots__ = ("loop", "thread", "task", "timer", "interrupting")
    loop: asyncio.AbstractEventLoop | None  # the loop execute() runs on
    thread: int  # that loop's thread
    task: asyncio.Task[Any] | None  # the task awaiting execute(), while it runs
    timer: asyncio.TimerHandle | None  # the call timeout
    interrupting: bool  # cancel() canceled ``task``: its CancelledError is ours to turn into CanceledError

    async def execute(self) -> Response:  # type: ignore[override]  # the same step, as a coroutine
        """Run the call through the interceptor chain on the running loop; returns a response whose body
        may stream (``await response.aread()``, ``async for ... in response.aiter_bytes()``)."""
        if self.executed:
            raise RuntimeError("Already Executed")
        self.executed = True
        return await self.run()

    async def run(self) -> Response:  # type: ignore[override]
        client = self.client
        if client.closed:
            raise RuntimeError("the client is closed: make a new fastnet.AsyncClient")
        loop = self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        self.task = asyncio.current_task()
        events = self.events
        self.started_at = started = monotonic()
        if client.call_timeout > 0:
            self.deadline = started + client.call_timeout
            self.timer = loop.call_later(client.call_timeout, self._time_out)
        if events is not None:
            events.call_start(self)
        request = self.request
        try:
            if self.canceled:
                raise self.canceled_error(request)
            chain = first_async_chain(
                self,
                client.interceptors,
                request,
                client.connect_timeout,
                client.read_timeout,
                client.write_timeout,
            )
            response = await chain.proceed(request)
            if self.canceled:
                response.close()
                raise self.canceled_error(request)
        except BaseException as exc:
            self.task = None
            error: BaseException = exc
            if self.interrupting and isinstance(exc, asyncio.CancelledError):
                # our own cancel() interrupted the task: not the caller's cancellation
                self.interrupting = False
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                error = self.canceled_error(request)
                error.__cause__ = exc
            self.fail(error)
            if isinstance(error, OSError):  # a NetworkError, or an I/O call cancel() cut short
                # a canceled call ends with CanceledError, or CallTimeout when its timer canceled it
                if self.canceled and not isinstance(
                    error, (CallTimeout if self.timed_out else CanceledError, PoolTimeout)
                ):
                    raise self.canceled_error(request) from error
                if isinstance(error, NetworkError):
                    error._locate(request.url, None)
            if error is exc:
                raise
            raise error from exc
        self.task = None
        self.returned = True
        if response._source is None:
            self.end()
        return response

    async def sleep(self, seconds: float) -> None:  # type: ignore[override]
        """Wait ``seconds`` (for backoff); ``cancel()`` and the call timeout cut it short with an error."""
        if self.canceled:
            raise self.canceled_error(self.request)
        if seconds > 0:
            if self.deadline > 0:
                seconds = min(seconds, max(0.0, self.deadline - monotonic()) + 0.05)
            await asyncio.sleep(seconds)  # cancel() interrupts it by canceling the task
        if self.canceled:
            raise self.canceled_error(self.request)

    def _time_out(self) -> None:
        self.timer = None
        if not self.finished:
            self.timed_out = True
            self.cancel()

    def cancel(self) -> None:
        """Cancel the call; safe from any thread (off the loop's thread it is scheduled onto the loop)."""
        loop = self.loop
        if loop is not None and threading.get_ident() != self.thread:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self.cancel)
            return
        if self.canceled:
            return
        RealCall.cancel(self)  # the flags, the event, the connection and the connect in flight
        task = self.task
        if task is not None and not task.done() and not self.interrupting:
            self.interrupting = True
            task.cancel()

    def end(self) -> None:
        self._stop_timer()
        RealCall.end(self)

    def fail(self, exc: BaseException) -> None:
        self._stop_timer()
        RealCall.fail(self, exc)

    def _stop_timer(self) -> None:
        timer = self.timer
        if timer is not None:
            self.timer = None
            timer.cancel()

    def enqueue(self, callback: Any = None, *, stream: bool = False) -> asyncio.Task[Response]:  # type: ignore[override]
        """Run the call as a task on the running loop; returns the ``asyncio.Task`` of its response.

        ``callback`` (optional) has ``on_response(call, response)`` and ``on_failure(call, error)`` (each
        may be a coroutine function), run before the task completes. The body is read before either,
        unless ``stream=True``: then the callback (or whoever awaits the task) must close it.
        """
        if self.executed:
            raise RuntimeError("Already Executed")
        self.executed = True
        return asyncio.get_running_loop().create_task(self._enqueued(callback, stream))

    async def _enqueued(self, callback: Any, stream: bool) -> Response:
        try:
            response = await self.run()
            if not stream:
                try:
                    await response.aread()
                except BaseException:
                    response.close()
                    raise
        except Exception as exc:
            if callback is not None:
                result = callback.on_failure(self, exc)
                if asyncio.iscoroutine(result):
                    await result
            raise
        if callback is not None:
            result = callback.on_response(self, response)
            if asyncio.iscoroutine(result):
                await result
        return response

    def clone(self) -> AsyncRealCall:
        return new_async_call(self.client, self.request)

    def __repr__(self) -> str:
        return f"<AsyncCall {self.request.method} {self.request.url.redacted()}>"


def new_async_call(client: ClientCore, request: Request) -> AsyncRealCall:
    """A fresh call (no ``__init__`` argument parsing: the per-request path)."""
    call = AsyncRealCall.__new__(AsyncRealCall)
    RealCall.__init__(call, client, request)
    call.loop = None
    call.thread = 0
    call.task = None
    call.timer = None
    call.interrupting = False
    return call


async def request(
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
    """Build, execute and (unless ``stream``) read a request: what ``AsyncClient.request`` runs, as
    ``real_call.request`` is for the blocking client (a request with options, or on a client with a
    ``base_url`` or ``params``, is built by the client's factory, which picks the core its call runs on)."""
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
        call = new_async_call(factory.core_for(client, req), req)
    else:
        # a str subclass (an enum.StrEnum member) takes the long way: Request makes it a plain str
        if (
            headers is None
            and body is None
            and json is None
            and type(method) is str
            and method in KNOWN_METHODS
        ):
            cached = _URL_CACHE.get(url) if isinstance(url, str) else None
            if cached is not None:  # a cached URL carries no credentials
                if proxy is not None and not isinstance(proxy, Proxy):
                    proxy = proxy_from_url(proxy)
                req = make_request(method, cached, EMPTY_HEADERS, None, proxy, None)
        if req is None:
            req = Request(method, url, headers, body, json, proxy)
        call = new_async_call(client, req)
    response = await call.execute()
    if not stream and response._source is not None:
        try:
            await response.aread()
        except BaseException:
            response.close()
            raise
    return response


async def get(
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
    """``AsyncClient.get``: a GET whose body is read."""
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
        cached = _URL_CACHE.get(url)
        if cached is not None:  # the keep-alive GET: a cached URL (no credentials), no options
            call = new_async_call(client, make_request("GET", cached, EMPTY_HEADERS, None, None, None))
            response = await call.execute()
            if response._source is not None:
                try:
                    await response.aread()
                except BaseException:
                    response.close()
                    raise
            return response
    return await request(
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
