"""The asyncio engine's I/O backend: what waits, wakes and runs work concurrently on the event loop.

The engine modules in ``_async/`` are the source of the blocking ones in ``_sync/`` (``scripts/unasync.py``);
where the two really differ in *how* they wait or run things, the source calls this module, and the
blocking module it generates calls ``_sync/io.py``, which offers the same names (modulo the ``Async``
prefix and the method names unasync maps). Both files are written by hand; neither is generated. Each
section serves one engine module and says which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["AsyncLock", "AsyncQueue", "QueueEmpty", "StateLock", "start_worker", "stop_workers"]


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
