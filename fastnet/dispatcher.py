"""``Dispatcher``: runs enqueued calls on threads, at most ``max_requests`` at once and
``max_requests_per_host`` to one host, as OkHttp's Dispatcher does.

Theory of operation
-------------------
``call.enqueue()`` hands a call to its client's dispatcher, which keeps two collections under one lock:
the *ready* queue (FIFO) and the *running* calls with a count per host. Promotion walks the ready queue
in order; it stops when ``max_requests`` calls are running, and it skips (but keeps, in order) a call
whose host is at ``max_requests_per_host``. A promoted call runs on the executor's thread; when it
finishes, its slot frees and promotion runs again. Raising a limit promotes at once. The host is the
request URL's host name as the call started (port and scheme ignored; redirects do not change it).

Calls run with ``execute()`` are never queued and not counted: they run on the caller's thread.

A call that has to wait reports ``dispatcher_queue_start`` when it is enqueued and
``dispatcher_queue_end`` when it starts; its ``call_timeout`` starts then (the wait is not part of the
call), and ``response.timings.queue`` is how long it waited. ``idle_callback`` runs whenever the last
running call finishes and none is waiting.

The default executor is a pool of daemon threads made on demand (one per running call at most, so it
is sized for waiting on I/O, not for CPUs) whose idle threads end after a minute.

>>> dispatcher = fastnet.Dispatcher(max_requests=128, max_requests_per_host=16)
>>> client = fastnet.Client(dispatcher=dispatcher)
>>> future = client.new_call(fastnet.Request("GET", url)).enqueue()
>>> future.result().status_code
200
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, Protocol

from fastnet._internal.clock import monotonic
from fastnet.exceptions import CanceledError

if TYPE_CHECKING:
    from fastnet._internal.real_call import RealCall
    from fastnet.response import Response

__all__ = ["Callback", "Dispatcher"]

_log = logging.getLogger("fastnet.dispatcher")
_IDLE_THREAD_SECONDS = 60.0


class Callback(Protocol):
    """What ``call.enqueue(callback)`` reports to, on the dispatcher's thread."""

    def on_response(self, call: RealCall, response: Response) -> None: ...
    def on_failure(self, call: RealCall, error: BaseException) -> None: ...


class _AsyncCall:
    """An enqueued call: its future, its callback, its host, and when it was enqueued."""

    __slots__ = ("call", "future", "callback", "stream", "host", "enqueued_at", "waited")

    def __init__(self, call: RealCall, callback: Callback | None, stream: bool) -> None:
        self.call = call
        self.future: Future[Response] = Future()
        self.callback = callback
        self.stream = stream
        self.host = call.request.url.host
        self.enqueued_at = monotonic()
        self.waited = False  # it could not start when enqueued: dispatcher_queue_start was reported


class Dispatcher:
    """Runs enqueued calls concurrently, within limits on the total and per host (see the module doc)."""

    def __init__(
        self, max_requests: int = 64, max_requests_per_host: int = 5, executor: Executor | None = None
    ):
        self._max_requests = _limit("max_requests", max_requests)
        self._max_per_host = _limit("max_requests_per_host", max_requests_per_host)
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise TypeError("executor must be a concurrent.futures.Executor (it needs submit())")
        self._executor = executor
        self._own_executor: _ThreadPool | None = None
        self._lock = threading.Lock()
        self._ready: deque[_AsyncCall] = deque()
        self._running: dict[_AsyncCall, None] = {}
        self._per_host: dict[str, int] = {}
        self._shut_down = False
        #: Called (with no arguments) whenever the last running call finishes and none is waiting.
        self.idle_callback: Callable[[], object] | None = None

    # -- limits ---------------------------------------------------------------------------------

    @property
    def max_requests(self) -> int:
        return self._max_requests

    @max_requests.setter
    def max_requests(self, value: int) -> None:
        self._max_requests = _limit("max_requests", value)
        self._promote()

    @property
    def max_requests_per_host(self) -> int:
        return self._max_per_host

    @max_requests_per_host.setter
    def max_requests_per_host(self, value: int) -> None:
        self._max_per_host = _limit("max_requests_per_host", value)
        self._promote()

    # -- calls ----------------------------------------------------------------------------------

    def enqueue(
        self, call: RealCall, callback: Callback | None = None, stream: bool = False
    ) -> Future[Response]:
        """Queue ``call`` (marked executed by ``call.enqueue()``, which is the way to use this)."""
        job = _AsyncCall(call, callback, stream)
        events = call.events
        with self._lock:
            if self._shut_down:
                shut = True
            else:
                shut = False
                self._ready.append(job)
                waits = (
                    len(self._running) >= self._max_requests
                    or self._per_host.get(job.host, 0) >= self._max_per_host
                )
        if shut:
            self._fail_unstarted(job, CanceledError("the dispatcher is shut down", url=call.request.url))
            return job.future
        if waits:
            job.waited = True
            if events is not None:
                events.dispatcher_queue_start(call)
        self._promote()
        return job.future

    def queued_calls(self) -> list[RealCall]:
        """The calls waiting to start, in the order they will be considered."""
        with self._lock:
            return [job.call for job in self._ready]

    def running_calls(self) -> list[RealCall]:
        """The enqueued calls running now (``execute()`` calls are not counted)."""
        with self._lock:
            return [job.call for job in self._running]

    def queued_calls_count(self) -> int:
        with self._lock:
            return len(self._ready)

    def running_calls_count(self) -> int:
        with self._lock:
            return len(self._running)

    def cancel_all(self) -> None:
        """Cancel every queued and running call (a queued one fails with ``CanceledError`` when its turn
        comes, at once)."""
        with self._lock:
            jobs = list(self._ready) + list(self._running)
        for job in jobs:
            job.call.cancel()

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new calls and fail the queued ones with ``CanceledError``; running calls finish (or
        ``cancel_all()`` first). With ``wait``, returns once they have."""
        with self._lock:
            self._shut_down = True
            queued = list(self._ready)
            self._ready.clear()
        for job in queued:
            job.call.cancel()
            self._fail_unstarted(job, CanceledError("the dispatcher was shut down", url=job.call.request.url))
        if wait:
            with self._lock:
                running = list(self._running)
            for job in running:
                try:
                    job.future.exception()
                except BaseException:  # noqa: BLE001 - only waiting here
                    pass
        pool = self._own_executor
        if pool is not None:
            pool.shutdown()

    # -- machinery ------------------------------------------------------------------------------

    def _promote(self) -> None:
        """Start what may start now (FIFO, skipping hosts at their limit); the submits happen unlocked."""
        start: list[_AsyncCall] = []
        with self._lock:
            if self._shut_down:
                return
            ready = self._ready
            if ready:
                kept: deque[_AsyncCall] = deque()
                while ready:
                    if len(self._running) >= self._max_requests:
                        kept.extend(ready)
                        ready.clear()
                        break
                    job = ready.popleft()
                    count = self._per_host.get(job.host, 0)
                    if count >= self._max_per_host:
                        kept.append(job)
                        continue
                    self._per_host[job.host] = count + 1
                    self._running[job] = None
                    start.append(job)
                self._ready = kept
        for job in start:
            self._submit(job)

    def _submit(self, job: _AsyncCall) -> None:
        executor = self._executor or self._default_executor()
        try:
            executor.submit(self._run, job)
        except RuntimeError as exc:  # the executor was shut down
            self._finished(job)
            error = CanceledError("executor rejected the call", url=job.call.request.url)
            error.__cause__ = exc
            self._deliver(job, None, error)

    def _default_executor(self) -> _ThreadPool:
        pool = self._own_executor
        if pool is None:
            with self._lock:
                pool = self._own_executor
                if pool is None:
                    pool = self._own_executor = _ThreadPool("fastnet-dispatcher")
        return pool

    def _run(self, job: _AsyncCall) -> None:
        call = job.call
        call.queued = monotonic() - job.enqueued_at
        events = call.events
        if job.waited and events is not None:
            events.dispatcher_queue_end(call)
        response: Response | None = None
        error: BaseException | None = None
        try:
            response = call.run()
            if not job.stream and response._source is not None:
                try:
                    response.read()
                except BaseException:
                    response.close()
                    raise
        except BaseException as exc:  # noqa: BLE001 - delivered to the callback and the future
            error = exc
            response = None
        try:
            self._deliver(job, response, error)
        finally:
            self._finished(job)

    def _deliver(self, job: _AsyncCall, response: Response | None, error: BaseException | None) -> None:
        callback = job.callback
        if callback is not None:
            try:
                if response is not None:
                    callback.on_response(job.call, response)
                else:
                    callback.on_failure(job.call, error or CanceledError("no response"))
            except Exception:  # a callback's own failure must not stop the dispatcher
                _log.exception("fastnet: the callback of %r raised", job.call)
        if response is not None:
            job.future.set_result(response)
        else:
            job.future.set_exception(error or CanceledError("no response"))

    def _fail_unstarted(self, job: _AsyncCall, error: BaseException) -> None:
        call = job.call
        events = call.events
        if events is not None:
            events.call_start(call)
            events.call_failed(call, error)
        self._deliver(job, None, error)

    def _finished(self, job: _AsyncCall) -> None:
        with self._lock:
            self._running.pop(job, None)
            count = self._per_host.get(job.host, 0) - 1
            if count > 0:
                self._per_host[job.host] = count
            else:
                self._per_host.pop(job.host, None)
            idle = not self._running and not self._ready
        self._promote()
        callback = self.idle_callback
        if idle and callback is not None:
            try:
                callback()
            except Exception:
                _log.exception("fastnet: the dispatcher's idle_callback raised")

    def __repr__(self) -> str:
        return (
            f"<Dispatcher running={self.running_calls_count()}/{self._max_requests} "
            f"queued={self.queued_calls_count()} per_host={self._max_per_host}>"
        )


def _limit(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, not {value}")
    return value


class _ThreadPool(Executor):
    """Daemon threads made on demand, each running one task at a time; idle ones end after a minute.
    The dispatcher bounds how many tasks run at once, so this never needs a bound of its own."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._tasks: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._idle = 0
        self._count = 0
        self._wake = threading.Condition(self._lock)
        self._shut_down = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def task() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - kept in the future
                future.set_exception(exc)

        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._tasks.append((task, ()))
            if self._idle:
                self._wake.notify()
                self._idle -= 1
                return future
            self._count += 1
            number = self._count
        threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._tasks:
                    if self._shut_down:
                        return
                    self._idle += 1
                    if not self._wake.wait(_IDLE_THREAD_SECONDS) and not self._tasks:
                        self._idle -= 1
                        return
                    if not self._tasks:
                        continue
                task, args = self._tasks.popleft()
            task(*args)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut_down = True
            self._wake.notify_all()
