"""The asyncio engine's I/O backend: what waits, wakes and runs work concurrently on the event loop.

The engine modules in ``_async/`` are the source of the blocking ones in ``_sync/`` (``scripts/unasync.py``);
where the two really differ in *how* they wait or run things, the source calls this module, and the
blocking module it generates calls ``_sync/io.py``, which offers the same names (modulo the ``Async``
prefix and the method names unasync maps). Both files are written by hand; neither is generated. Each
section serves one engine module and says which.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastnet.response import Response


# -- map's workers (map_calls) -----------------------------------------------------------------------
# Tasks on the running loop. The loop's one thread runs them a step at a time, so the state the workers
# share needs no lock between awaits (``StateLock`` is a no-op); stopping cancels the tasks, which
# cancels the calls they await.

#: Serialises the workers taking the next item of an input that is itself awaited.
AsyncLock = asyncio.Lock
#: The token and result queues: ``put_nowait``, ``await get()``, ``get_nowait`` (``QueueEmpty``).
AsyncQueue = asyncio.Queue
QueueEmpty = asyncio.QueueEmpty


class StateLock:
    """Guards the few fields the workers and the consumer share: nothing to guard on one thread."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


def start_worker(work: Callable[[], Coroutine[Any, Any, None]], name: str) -> asyncio.Task[None]:
    """Run ``work()`` as a task on the running loop."""
    return asyncio.get_running_loop().create_task(work(), name=name)


async def stop_workers(workers: list[asyncio.Task[None]], calls: list[Any]) -> None:
    """Stop the workers: cancel their tasks (and with them the calls they await) and wait for them.
    ``calls`` are for the blocking side, whose threads cannot be interrupted."""
    for worker in workers:
        worker.cancel()
    if workers:
        await asyncio.gather(*workers, return_exceptions=True)


# -- the call (real_call): where it runs, its timeout, cancel from any thread, backoff, enqueue ------
# The call runs on the running loop; ``cancel()`` from another thread hops onto it, and interrupts the
# call by canceling the task awaiting ``execute()``; the call timeout is a timer on that loop.
# (``execute()`` remembers that loop, its thread and the task on ``# async-only`` lines of the source.)


def call_failed(call: Any, exc: BaseException) -> BaseException:
    """The error the call fails with when ``exc`` ended ``execute()``: the ``CancelledError`` of its own
    ``cancel()`` becomes ``CanceledError`` (the task's cancellation taken back: the caller's task is not
    left canceled); the caller's own cancellation stays."""
    call.task = None
    if call.interrupting and isinstance(exc, asyncio.CancelledError):
        call.interrupting = False
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        error = call.canceled_error(call.request)
        error.__cause__ = exc
        return error  # type: ignore[no-any-return]
    return exc


def arm_call_timeout(call: Any, seconds: float) -> None:
    """Cancel the call as ``CallTimeout`` in ``seconds`` (a timer on its loop)."""
    call.timer = call.loop.call_later(seconds, _time_out, call)


def _time_out(call: Any) -> None:
    call.timer = None
    if not call.finished:
        call.timed_out = True
        call.cancel()


def disarm_call_timeout(call: Any) -> None:
    """The call ended before its timeout: stop the timer."""
    timer = call.timer
    if timer is not None:
        call.timer = None
        timer.cancel()


def cancel_elsewhere(call: Any) -> bool:
    """``cancel()`` off the loop's thread: schedule it onto the call's loop (True); else False."""
    loop = call.loop
    if loop is not None and threading.get_ident() != call.thread:
        if not loop.is_closed():
            loop.call_soon_threadsafe(call.cancel)
        return True
    return False


def interrupt(call: Any) -> None:
    """``cancel()``: while ``execute()`` runs, cancel the task awaiting it (no await outlives the call)."""
    task = call.task
    if task is not None and not task.done() and not call.interrupting:
        call.interrupting = True
        task.cancel()


async def backoff_sleep(call: Any, seconds: float) -> None:
    """Wait ``seconds``: ``cancel()`` cuts it short by canceling the task."""
    await asyncio.sleep(seconds)


#: What ``enqueue()`` returns: the task of the call's response.
AsyncCallFuture = asyncio.Task


def run_in_background(call: Any, callback: Any, stream: bool) -> asyncio.Task[Response]:
    """Run ``call`` as a task on the running loop: its response, the body read unless ``stream``;
    ``callback``'s ``on_response``/``on_failure`` (each may be a coroutine function) run before the task
    completes."""
    return asyncio.get_running_loop().create_task(_enqueued(call, callback, stream))


async def _enqueued(call: Any, callback: Any, stream: bool) -> Response:
    try:
        response: Response = await call.run()
        if not stream:
            try:
                await response.aread()
            except BaseException:
                response.close()
                raise
    except Exception as exc:
        if callback is not None:
            result = callback.on_failure(call, exc)
            if asyncio.iscoroutine(result):
                await result
        raise
    if callback is not None:
        result = callback.on_response(call, response)
        if asyncio.iscoroutine(result):
            await result
    return response
