"""``AsyncClient.map``: many requests at once as tasks, results as they complete (or in input order).

The blocking ``client.map``'s design on the event loop: worker tasks share the input (a sync or an async
iterable, taken one item at a time, never read ahead) and run each request to the end of its body. They
start as the input needs them, up to ``max_in_flight``: one at first, and another whenever a worker has
taken an item while no other waits to take one (at most one more task than items taken). A token queue
bounds the work: a worker takes a token before it takes an item, and the
token comes back only when the consumer has been handed that item's result, so at most
``max_in_flight`` requests are running or waiting to be yielded.

Closing the generator early (``break`` then ``aclose()``, an exception, ``contextlib.aclosing``) stops
cleanly: no new item is taken, the worker tasks are canceled (which cancels their calls: the
connections go back or are closed) and awaited, and the results nobody took are closed. An exception
raised by the input itself is raised in the consumer after the results before it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from fastnet.request import Request

if TYPE_CHECKING:
    from fastnet._internal._sync.map_calls import MapItem
    from fastnet.async_client import AsyncClient
    from fastnet.response import Response

__all__ = ["async_map_calls"]

_END = object()  # a worker's "the input is exhausted" (or failed) marker


def async_map_calls(
    client: AsyncClient,
    requests: Iterable[MapItem] | AsyncIterable[MapItem],
    max_in_flight: int,
    ordered: bool,
) -> AsyncIterator[tuple[MapItem, Response | Exception]]:
    """The machinery of ``AsyncClient.map`` (see there)."""
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise ValueError(f"max_in_flight must be an int >= 1, not {max_in_flight!r}")
    if isinstance(requests, AsyncIterable):
        items: Any = requests.__aiter__()
        is_async = True
    else:
        items = iter(requests)
        is_async = False
    return _Run(client, items, is_async, max_in_flight).results(ordered)


class _Run:
    """One ``map()``: the shared input, the token queue, the result queue and the worker tasks."""

    def __init__(self, client: AsyncClient, items: Any, is_async: bool, width: int) -> None:
        self.client = client
        self.items = items
        self.is_async = is_async
        self.items_lock = asyncio.Lock()  # an async input is awaited: one worker at a time takes an item
        self.counter = itertools.count()
        self.exhausted = False
        self.input_error: BaseException | None = None
        self.width = width
        self.tokens: asyncio.Queue[None] = asyncio.Queue()
        for _ in range(width):
            self.tokens.put_nowait(None)
        self.out: asyncio.Queue[tuple[int, Any, Any]] = asyncio.Queue()
        self.workers: list[asyncio.Task[None]] = []
        self.taking = 0  # workers between runs: waiting for a token or taking an item

    async def _next(self) -> tuple[int, MapItem] | None:
        if self.exhausted:
            return None
        if not self.is_async:
            try:
                item = next(self.items)
            except StopIteration:
                self.exhausted = True
                return None
            except Exception as exc:  # noqa: BLE001 - the input's own failure, raised in the consumer
                self.exhausted = True
                self.input_error = exc
                return None
            return next(self.counter), item
        async with self.items_lock:
            if self.exhausted:
                return None
            try:
                item = await self.items.__anext__()
            except StopAsyncIteration:
                self.exhausted = True
                return None
            except Exception as exc:  # noqa: BLE001
                self.exhausted = True
                self.input_error = exc
                return None
            return next(self.counter), item

    def _grow(self) -> None:
        """Start a worker task to take the next item (counted as taking until it has)."""
        self.workers.append(asyncio.get_running_loop().create_task(self._work()))
        self.taking += 1

    async def _work(self) -> None:
        while True:
            await self.tokens.get()
            taken = await self._next()
            self.taking -= 1
            if taken is None:
                self.out.put_nowait((-1, _END, None))
                return
            if not self.taking and len(self.workers) < self.width and not self.exhausted:
                self._grow()  # nobody else is ready for the next item
            index, item = taken
            outcome = await self._outcome(item)
            self.taking += 1
            self.out.put_nowait((index, item, outcome))
            outcome = None  # this task keeps nothing of it while it waits for the next item

    async def _outcome(self, item: MapItem) -> Any:
        """Run one item's request to the end of its body: the response, or the exception."""
        client = self.client
        try:
            request = item if isinstance(item, Request) else client.build_request("GET", item)
            call = client.new_call(request)
        except Exception as exc:  # a bad URL or request: that item's outcome
            return exc
        try:
            response = await call.execute()
            if response._source is not None:
                try:
                    await response.aread()
                except BaseException:
                    response.close()
                    raise
            return response
        except Exception as exc:  # noqa: BLE001 - network failures and the like are results
            return exc

    async def results(self, ordered: bool) -> AsyncIterator[tuple[MapItem, Response | Exception]]:
        self._grow()
        ended = 0
        pending: dict[int, tuple[Any, Any]] = {}
        expected = 0
        try:
            # a worker starts the next one before it reports its own end: none is missed
            while ended < len(self.workers):
                index, item, outcome = await self.out.get()
                if item is _END:
                    ended += 1
                    continue
                # yielded straight from ``pending``: no local keeps a result once it was handed over
                pending[index] = (item, outcome)
                item = outcome = None
                if not ordered:
                    self.tokens.put_nowait(None)
                    yield pending.pop(index)
                    continue
                while expected in pending:
                    expected += 1
                    self.tokens.put_nowait(None)
                    yield pending.pop(expected - 1)
            # every worker ended: the ordered buffer is empty unless an index was skipped
            for index in sorted(pending):
                yield pending.pop(index)
            if self.input_error is not None:
                raise self.input_error
        finally:
            await self._stop(pending)

    async def _stop(self, pending: dict[int, tuple[Any, Any]]) -> None:
        """Leave cleanly: cancel the workers (and with them their calls), close unclaimed responses."""
        self.exhausted = True  # no worker starts after this
        for worker in self.workers:
            worker.cancel()
        if self.workers:
            await asyncio.gather(*self.workers, return_exceptions=True)
        leftovers = list(pending.values())
        while not self.out.empty():
            _index, item, outcome = self.out.get_nowait()
            if item is not _END:
                leftovers.append((item, outcome))
        for _item, outcome in leftovers:
            close = getattr(outcome, "close", None)
            if close is not None:
                close()
