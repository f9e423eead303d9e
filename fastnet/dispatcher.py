"""``Dispatcher``: runs enqueued calls on threads, at most ``max_requests`` at once and
``max_requests_per_host`` to one host, as OkHttp's Dispatcher does.

Theory of operation
-------------------
``call.enqueue()`` hands a call to its client's dispatcher, which keeps two collections under one lock:
the *ready* queue (FIFO) and the *running* calls with a count per host. Promotion walks the ready queue
in order; it stops when ``max_requests`` calls are running, and it skips (but keeps, in order) a call
whose host is at ``max_requests_per_host``. Every change of that state (a call enqueued, a call
finished, a limit changed) promotes in the same critical section, so between two changes every waiting
call is blocked by a limit, and a new call that finds room may start at once without passing anyone
who could have started. The submits to the executor happen after the lock is released. A promoted call
runs on the executor's thread; when it finishes, its slot frees and promotion runs again. Raising a
limit promotes at once. The host is the request URL's host name as the call started (port and scheme
ignored; redirects do not change it).

Calls run with ``execute()`` (``client.get()`` and the like) run on the caller's thread, never queued and
outside the limits (they take no slot), but, as in OkHttp, the dispatcher counts them among its running
calls until ``execute()`` returns: ``running_calls()`` lists them, ``cancel_all()`` cancels them and the
idle callback waits for them. A dispatcher counts them once a program can see it: from the start when it
was given to the client, and for a client's own default one from the first read of ``client.dispatcher``
(a call already running then is not counted). Until then the client's calls skip it at the cost of one
test, so the default dispatcher of a client that never looks at it costs ``execute()`` nothing.

A call that has to wait reports ``dispatcher_queue_start`` before it joins the ready queue (so no other
thread can start it, and report ``dispatcher_queue_end``, before that) and ``dispatcher_queue_end``
when it starts or is failed unstarted; its ``call_timeout`` starts when it runs (the wait is not part
of the call), and ``response.timings.queue`` is how long it waited. ``idle_callback`` runs whenever the
last running call (enqueued or executed) finishes (after its callback) and none is waiting.

The future of an enqueued call resolves after the callback returned. ``future.cancel()`` of a call that
has not started cancels the call (its callback still hears ``on_failure``); once the call runs, its
future cannot be canceled, as any ``concurrent.futures`` future: ``call.cancel()`` stops it. A callback
that raises is logged and changes nothing else.

The default executor is a pool of daemon threads made on demand, never more than ``max_requests`` (one
per running call, so it is sized for waiting on I/O, not for CPUs), whose idle threads end after a
minute and hold nothing of the calls they ran.

>>> dispatcher = fastnet.Dispatcher(max_requests=128, max_requests_per_host=16)
>>> client = fastnet.Client(dispatcher=dispatcher)
>>> future = client.new_call(fastnet.Request("GET", url)).enqueue()
>>> future.result().status_code
200
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

from fastnet._internal.util.clock import monotonic
from fastnet.exceptions import CanceledError

if TYPE_CHECKING:
    from fastnet._internal._sync.real_call import RealCall
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.response import Response

__all__ = ["Callback", "Dispatcher"]

_log = logging.getLogger("fastnet.dispatcher")
_P = ParamSpec("_P")
_T = TypeVar("_T")
_IDLE_THREAD_SECONDS = 60.0


class Callback(Protocol):
    """What ``call.enqueue(callback)`` reports to, on the dispatcher's thread."""

    def on_response(self, call: RealCall, response: Response) -> None: ...
    def on_failure(self, call: RealCall, error: BaseException) -> None: ...


class _AsyncCall:
    """An enqueued call: its future, its callback, its host, and when it was enqueued."""

    __slots__ = ("call", "future", "callback", "stream", "host", "enqueued_at", "waited", "thread")

    def __init__(self, call: RealCall, callback: Callback | None, stream: bool) -> None:
        self.call = call
        self.future: Future[Response] = Future()
        self.callback = callback
        self.stream = stream
        self.host = call.request.url.host
        self.enqueued_at = monotonic()
        self.waited = False  # it could not start when enqueued: dispatcher_queue_start was reported
        self.thread = 0  # the ident of the thread running it, once it runs


def _cancel_call_with_future(call: RealCall) -> Callable[[Future[Response]], None]:
    def done(future: Future[Response]) -> None:
        if future.cancelled():
            # concurrent.futures.wait() and as_completed() count a canceled future as done only once
            # the executor side has been told (CANCELLED_AND_NOTIFIED): this is that side
            _mark_running(future)
            call.cancel()

    return done


def _mark_running(future: Future[Response]) -> bool:
    """``set_running_or_notify_cancel()``, once, whichever of two threads gets there first; False when
    the future was canceled."""
    try:
        return future.set_running_or_notify_cancel()
    except RuntimeError:  # canceled, and the other thread already notified the waiters
        return False


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
        self._changed = threading.Condition(self._lock)  # a running call finished (for shutdown(wait))
        self._ready: deque[_AsyncCall] = deque()
        self._running: dict[_AsyncCall, None] = {}
        self._per_host: dict[str, int] = {}  # running calls per host
        self._waiting_per_host: dict[str, int] = {}  # calls in the ready queue per host
        self._shut_down = False
        self._waiting_for_running = 0
        self._running_sync: dict[RealCall, None] = {}  # execute() calls running now (in no limit)
        self._observed = True  # made by the program: it counts execute() calls from the start
        self._cores: weakref.WeakSet[ClientCore] = weakref.WeakSet()  # the clients using it
        #: Called (with no arguments) whenever the last running call finishes and none is waiting.
        self.idle_callback: Callable[[], object] | None = None

    @classmethod
    def _unobserved(cls) -> Dispatcher:
        """A client's own default dispatcher: nobody sees it until ``client.dispatcher`` is read."""
        dispatcher = cls()
        dispatcher._observed = False
        return dispatcher

    def _attach(self, core: ClientCore) -> None:
        """A client uses this dispatcher: its ``execute()`` calls are counted once it is observed."""
        with self._lock:
            self._cores.add(core)
            if self._observed:
                core.sync_dispatcher = self

    def _observe(self) -> None:
        """The program can see this dispatcher now: count the ``execute()`` calls of every client using it."""
        if self._observed:
            return
        with self._lock:
            self._observed = True
            for core in self._cores:
                core.sync_dispatcher = self

    # -- limits ---------------------------------------------------------------------------------

    @property
    def max_requests(self) -> int:
        return self._max_requests

    @max_requests.setter
    def max_requests(self, value: int) -> None:
        checked = _limit("max_requests", value)
        with self._lock:
            self._max_requests = checked
            pool = self._own_executor
            start = self._promote_locked()
        if pool is not None:
            pool.set_max_threads(checked)
        self._submit_all(start)

    @property
    def max_requests_per_host(self) -> int:
        return self._max_per_host

    @max_requests_per_host.setter
    def max_requests_per_host(self, value: int) -> None:
        checked = _limit("max_requests_per_host", value)
        with self._lock:
            self._max_per_host = checked
            start = self._promote_locked()
        self._submit_all(start)

    # -- calls ----------------------------------------------------------------------------------

    def enqueue(
        self, call: RealCall, callback: Callback | None = None, stream: bool = False
    ) -> Future[Response]:
        """Queue ``call`` (marked executed by ``call.enqueue()``, which is the way to use this)."""
        job = _AsyncCall(call, callback, stream)
        job.future.add_done_callback(_cancel_call_with_future(call))
        with self._lock:
            shut = self._shut_down
            now = not shut and self._has_room_locked(job.host)
            if now:
                self._start_locked(job)
        if shut:
            self._fail_unstarted(job, CanceledError("the dispatcher is shut down", url=call.request.url))
        elif now:
            self._submit_all([job])
        else:
            # it has to wait: say so before it is in the queue, where another thread may start it
            job.waited = True
            events = call.events
            if events is not None:
                events.dispatcher_queue_start(call)
            with self._lock:
                shut = self._shut_down
                if not shut:
                    self._ready.append(job)
                    self._waiting_per_host[job.host] = self._waiting_per_host.get(job.host, 0) + 1
                    start = self._promote_locked()
            if shut:
                self._fail_unstarted(job, CanceledError("the dispatcher is shut down", url=call.request.url))
            else:
                self._submit_all(start)
        return job.future

    def queued_calls(self) -> list[RealCall]:
        """The calls waiting to start, in the order they will be considered."""
        with self._lock:
            return [job.call for job in self._ready]

    def running_calls(self) -> list[RealCall]:
        """The calls running now: the enqueued ones, then those running in ``execute()``."""
        with self._lock:
            return [job.call for job in self._running] + self._sync_calls()

    def queued_calls_count(self) -> int:
        with self._lock:
            return len(self._ready)

    def running_calls_count(self) -> int:
        with self._lock:
            return len(self._running) + len(self._running_sync)

    def cancel_all(self) -> None:
        """Cancel every queued and running call, ``execute()`` calls included. A running one fails at once
        (its socket is shut down); a queued one keeps its place and fails with ``CanceledError``, without
        touching the network, when its turn comes."""
        with self._lock:
            calls = [job.call for job in self._ready] + [job.call for job in self._running]
            calls += self._sync_calls()
        for call in calls:
            call.cancel()

    def _sync_calls(self) -> list[RealCall]:
        """The ``execute()`` calls running now. Their dict changes without the lock, one atomic step at a
        time; should a finalizer run during the copy and let another thread change it, copy again."""
        for _ in range(100):
            try:
                return list(self._running_sync)
            except RuntimeError:  # dictionary changed size during iteration
                pass
        return []

    def _sync_finished(self, call: RealCall) -> None:
        """``execute()`` of ``call`` returned or raised, and an idle callback is set (OkHttp's ``finished``).

        ``execute()`` itself adds the call to ``_running_sync`` and, with no idle callback, takes it out
        (OkHttp's ``executed``/``finished``): one dict operation each, atomic, without the lock."""
        with self._lock:
            self._running_sync.pop(call, None)
            idle = not self._running and not self._ready and not self._running_sync
        if idle:
            self._run_idle_callback()

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new calls and fail the queued ones with ``CanceledError``; running calls finish (or
        ``cancel_all()`` first). With ``wait``, returns once they have (a callback that calls this does
        not wait for its own call)."""
        with self._lock:
            self._shut_down = True
            queued = list(self._ready)
            self._ready.clear()
            self._waiting_per_host.clear()
        for job in queued:
            job.call.cancel()
            self._fail_unstarted(job, CanceledError("the dispatcher was shut down", url=job.call.request.url))
        if wait:
            me = threading.get_ident()
            with self._lock:
                self._waiting_for_running += 1
                try:
                    while any(job.thread != me for job in self._running):
                        self._changed.wait()
                finally:
                    self._waiting_for_running -= 1
        pool = self._own_executor
        if pool is not None:
            pool.shutdown()

    # -- machinery ------------------------------------------------------------------------------

    def _has_room_locked(self, host: str) -> bool:
        return len(self._running) < self._max_requests and self._per_host.get(host, 0) < self._max_per_host

    def _start_locked(self, job: _AsyncCall) -> None:
        self._per_host[job.host] = self._per_host.get(job.host, 0) + 1
        self._running[job] = None

    def _release_locked(self, job: _AsyncCall) -> None:
        if job not in self._running:  # never started, or already released
            return
        del self._running[job]
        count = self._per_host.get(job.host, 0) - 1
        if count > 0:
            self._per_host[job.host] = count
        else:
            self._per_host.pop(job.host, None)
        if self._waiting_for_running:
            self._changed.notify_all()

    def _promote_locked(self) -> list[_AsyncCall]:
        """Move what may start now to running (FIFO, skipping hosts at their limit); the caller submits.

        O(calls started + calls passed over): it returns at once when ``max_requests`` run, and stops
        as soon as every host with a waiting call is at its limit (so 10,000 calls waiting for one
        host cost nothing per promotion); the calls passed over go back to the front, in order."""
        ready = self._ready
        running = self._running
        max_requests = self._max_requests
        if self._shut_down or not ready or len(running) >= max_requests:
            return []
        per_host = self._per_host
        max_per_host = self._max_per_host
        waiting = self._waiting_per_host
        start: list[_AsyncCall] = []
        passed: list[_AsyncCall] = []
        full: set[str] = set()
        while ready and len(running) < max_requests:
            host = ready[0].host
            if per_host.get(host, 0) >= max_per_host:
                full.add(host)
                if len(full) == len(waiting):  # every host with a waiting call is at its limit
                    break
                passed.append(ready.popleft())
                continue
            job = ready.popleft()
            left = waiting[host] - 1
            if left:
                waiting[host] = left
            else:
                del waiting[host]
            self._start_locked(job)
            start.append(job)
        if passed:
            ready.extendleft(reversed(passed))
        return start

    def _submit_all(self, jobs: list[_AsyncCall]) -> None:
        """Hand promoted calls to the executor. A rejected call (a shut-down executor) fails as OkHttp's
        does and frees its slot, which may promote more: a loop, not recursion, however many wait."""
        while jobs:
            rejected: list[tuple[_AsyncCall, BaseException]] = []
            for job in jobs:
                try:
                    executor = self._executor
                    if executor is None:
                        self._default_executor().run_soon(self._run, job)
                    else:
                        executor.submit(self._run, job)
                except RuntimeError as exc:  # the executor was shut down
                    rejected.append((job, exc))
            if not rejected:
                return
            with self._lock:
                for job, _ in rejected:
                    self._release_locked(job)
                jobs = self._promote_locked()
                idle = not self._running and not self._ready and not self._running_sync
            for job, cause in rejected:
                error = CanceledError("executor rejected the call", url=job.call.request.url)
                error.__cause__ = cause
                self._fail_unstarted(job, error)
            if idle and not jobs:
                self._run_idle_callback()

    def _default_executor(self) -> _ThreadPool:
        pool = self._own_executor
        if pool is None:
            with self._lock:
                pool = self._own_executor
                if pool is None:
                    pool = self._own_executor = _ThreadPool("fastnet-dispatcher", self._max_requests)
        return pool

    def _run(self, job: _AsyncCall) -> None:
        call = job.call
        job.thread = threading.get_ident()
        call.queued = monotonic() - job.enqueued_at
        # from here future.cancel() returns False, as for any running future: call.cancel() stops it.
        # A future canceled while queued canceled its call, which now fails at once (call_start,
        # call_failed, on_failure), so every enqueued call ends one way only.
        _mark_running(job.future)
        response: Response | None = None
        error: BaseException | None = None
        try:
            events = call.events
            if job.waited and events is not None:
                events.dispatcher_queue_end(call)
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
        """The callback first, then the future (resolved even if the callback raised)."""
        callback = job.callback
        failure: BaseException | None = error
        if response is None and failure is None:
            failure = CanceledError("no response", url=job.call.request.url)
        try:
            if callback is not None:
                try:
                    if response is not None:
                        callback.on_response(job.call, response)
                    elif failure is not None:
                        callback.on_failure(job.call, failure)
                except Exception:  # a callback's own failure must not stop the dispatcher
                    _log.exception("fastnet: the callback of %r raised", job.call)
        finally:
            future = job.future
            try:
                if response is not None:
                    future.set_result(response)
                elif failure is not None:
                    future.set_exception(failure)
            except InvalidStateError:  # canceled while queued: nobody takes this result
                if response is not None and callback is None:
                    response.close()

    def _fail_unstarted(self, job: _AsyncCall, error: BaseException) -> None:
        call = job.call
        events = call.events
        if events is not None:
            if job.waited:
                events.dispatcher_queue_end(call)
            events.call_start(call)
            events.call_failed(call, error)
        self._deliver(job, None, error)

    def _finished(self, job: _AsyncCall) -> None:
        with self._lock:
            self._release_locked(job)
            start = self._promote_locked()
            idle = not self._running and not self._ready and not self._running_sync
        if start:
            self._submit_all(start)
        elif idle:
            self._run_idle_callback()

    def _run_idle_callback(self) -> None:
        callback = self.idle_callback
        if callback is not None:
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
    """Daemon threads made on demand, never more than ``max_threads`` (the dispatcher's ``max_requests``),
    each running one task at a time; idle ones end after a minute, and so do those past a lowered bound.

    A task goes to an idle thread when one waits (each idle thread counts itself while it waits, so a
    thread ending on its idle timeout can never leave a task unclaimed); else a new thread starts while
    there are fewer than ``max_threads``; else it waits for a busy thread to come back. The dispatcher
    submits a call only into a free slot, so such a thread is one whose call just ended. A thread keeps no
    reference to a task it ran: a finished call, its future and its response belong to the caller alone.
    ``run_soon`` is ``submit`` without a Future (the dispatcher keeps its own)."""

    def __init__(self, name: str, max_threads: int) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._tasks: deque[tuple[Callable[..., object], tuple[object, ...]]] = deque()
        self._idle = 0
        self._threads = 0  # alive
        self._made = 0  # ever made (their names)
        self._max_threads = max_threads
        self._wake = threading.Condition(self._lock)
        self._shut_down = False

    def set_max_threads(self, value: int) -> None:
        with self._lock:
            self._max_threads = value
            self._wake.notify_all()  # idle threads past the new bound end

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        future: Future[_T] = Future()

        def task() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - kept in the future
                future.set_exception(exc)

        self.run_soon(task)
        return future

    def run_soon(self, fn: Callable[..., object], *args: object) -> None:
        """Run ``fn(*args)`` on a pool thread; its exceptions are logged."""
        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._tasks.append((fn, args))
            if self._idle >= len(self._tasks) or self._threads >= self._max_threads:
                self._wake.notify()
                return
            self._threads += 1
            self._made += 1
            number = self._made
        threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._tasks:
                    # a thread stops counting itself in the same critical section as it decides to end
                    if self._shut_down or self._threads > self._max_threads:
                        self._threads -= 1
                        return
                    self._idle += 1
                    try:
                        woke = self._wake.wait(_IDLE_THREAD_SECONDS)
                    finally:
                        self._idle -= 1
                    if not woke and not self._tasks:
                        self._threads -= 1
                        return
                fn, args = self._tasks.popleft()
            try:
                fn(*args)
            except BaseException:  # noqa: BLE001 - one task's failure must not end the thread
                _log.exception("fastnet: a dispatcher task raised")
            del fn, args  # nothing of the job stays referenced while this thread waits for work

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut_down = True
            self._wake.notify_all()
