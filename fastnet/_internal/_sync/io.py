"""The blocking engine's I/O backend: what waits, wakes and runs work concurrently on threads.

The engine modules in ``_sync/`` are generated from the asyncio ones in ``_async/`` (``scripts/unasync.py``);
where the two really differ in *how* they wait or run things, the source calls ``_async/io.py``, and the
generated module calls this one, which offers the same names (modulo the ``Async`` prefix and the method
names unasync maps). Both files are written by hand; neither is generated. Each section serves one
engine module and says which.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from fastnet._internal.call.client_core import watchdog

if TYPE_CHECKING:
    from fastnet.response import Response


# -- map's workers (map_calls) -----------------------------------------------------------------------
# Threads. A worker blocked in a call cannot be interrupted, so stopping cancels the calls in flight (a
# blocked read or write fails at once) and joins the threads, 30 s in all: a worker blocked inside the
# input's own ``next()`` cannot be interrupted.

#: Serialises the workers taking the next item of the input.
Lock = threading.Lock
#: The token and result queues: ``put_nowait``, ``get()``, ``get_nowait`` (``QueueEmpty``).
Queue = queue.SimpleQueue
QueueEmpty = queue.Empty
#: Guards the few fields the workers and the consumer share.
StateLock = threading.Lock

_JOIN_SECONDS = 30.0  # how long stopping waits, in all, for the workers to end


def start_worker(work: Callable[[], None], name: str) -> threading.Thread:
    """Run ``work()`` on a new daemon thread (``RuntimeError`` when no thread is to be had)."""
    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    return worker


def stop_workers(workers: list[threading.Thread], calls: list[Any]) -> None:
    """Stop the workers: cancel ``calls``, those in flight, and join the threads."""
    for call in calls:
        call.cancel()
    deadline = time.monotonic() + _JOIN_SECONDS
    for worker in workers:
        worker.join(timeout=max(0.0, deadline - time.monotonic()))


# -- the call (real_call): where it runs, its timeout, cancel from any thread, backoff, enqueue ------
# The call runs on the caller's thread; ``cancel()`` from any thread shuts its socket down (the call's
# own work) and wakes a backoff sleep; the call timeout is the process's watchdog thread, which gives up
# on a call whose deadline is no longer the one it was armed with (``end``/``fail`` set it to -1).


def call_failed(call: Any, exc: BaseException) -> BaseException:
    """The error the call fails with when ``exc`` ended ``execute()``: ``exc``."""
    return exc


def arm_call_timeout(call: Any, seconds: float) -> None:
    """Cancel the call as ``CallTimeout`` at its deadline (the watchdog)."""
    watchdog().watch(call)


def disarm_call_timeout(call: Any) -> None:
    """The call ended before its timeout: nothing to do (the watchdog reads the deadline)."""


def cancel_elsewhere(call: Any) -> bool:
    """``cancel()`` runs on any thread: False."""
    return False


def interrupt(call: Any) -> None:
    """``cancel()``: wake a backoff sleep."""
    wakeup = call.wakeup
    if wakeup is not None:
        wakeup.set()


def backoff_sleep(call: Any, seconds: float) -> None:
    """Wait ``seconds``: ``cancel()`` cuts it short (``interrupt``)."""
    wakeup = call.wakeup
    if wakeup is None:
        wakeup = call.wakeup = threading.Event()
    if not call.canceled:  # a cancel() before the event was there could not set it
        wakeup.wait(seconds)


#: What ``enqueue()`` returns: the future of the call's response.
CallFuture = Future


def run_in_background(call: Any, callback: Any, stream: bool) -> Future[Response]:
    """Run ``call`` on its client's dispatcher: the future of its response, the body read unless
    ``stream``; ``callback``'s ``on_response``/``on_failure`` run on the dispatcher's thread before the
    future resolves."""
    future: Future[Response] = call.client.dispatcher.enqueue(call, callback, stream)
    return future
