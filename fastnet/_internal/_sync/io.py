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
from typing import Any

__all__ = ["Lock", "Queue", "QueueEmpty", "StateLock", "start_worker", "stop_workers"]


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
