"""``client.map``: many requests at once on threads, results as they complete (or in input order).

Theory of operation
-------------------
Worker threads share the input iterator (taken under a lock, one item at a time, so a generator is
consumed lazily and never read ahead) and run each request to the end of its body. They start as the
input needs them, up to ``max_in_flight``: one at first, and another whenever a worker has taken an item
while no other waits to take one, so there is at most one more worker than items taken (one URL costs
two threads, whatever ``max_in_flight`` says). A
token queue of ``max_in_flight`` tokens bounds the work: a worker takes a token before it takes an item,
and the token comes back only when the consumer has been handed that item's result. So at most
``max_in_flight`` requests are running or waiting to be yielded, whatever order they finish in, and in
``ordered`` mode a slow first request makes the others wait for it rather than pile up.

Leaving the loop early (``break``, an exception, closing the generator) stops cleanly: no new item is
taken, the calls in flight are canceled (an item a worker was taking as the loop ended is canceled
before it reaches the network), the workers are joined (30 s in all: a worker blocked inside the
input's own ``next()`` cannot be interrupted) and the results nobody took are closed. An exception
raised by the input iterator itself is raised in the consumer after the results before it.

The calls run on their own threads, not on the client's dispatcher: ``max_in_flight`` is the one limit
(use ``max_connections_per_host`` on the pool for politeness per host). The pool keeps at most
``max_idle_connections`` (32 by default, ``map``'s default width) idle: with more in flight to one host,
the connections past that are closed as calls end and opened again by the next ones, so a client for a
wider ``map`` wants ``ConnectionPool(max_idle_connections=max_in_flight)``.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from fastnet.request import Request
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet._internal._sync.real_call import RealCall
    from fastnet.client import Client
    from fastnet.response import Response

__all__ = ["MapItem", "map_calls"]

#: What ``client.map`` takes: a URL string, a ``fastnet.URL`` or a ``fastnet.Request`` (GET for a URL).
MapItem = str | URL | Request

_END = object()  # a worker's "the input is exhausted" (or failed) marker
_JOIN_SECONDS = 30.0  # how long leaving the loop waits, in all, for the workers to end


def map_calls(
    client: Client, requests: Iterable[MapItem], max_in_flight: int, ordered: bool
) -> Iterator[tuple[MapItem, Response | Exception]]:
    """The machinery of ``Client.map`` (see there)."""
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise ValueError(f"max_in_flight must be an int >= 1, not {max_in_flight!r}")
    run = _Run(client, iter(requests), max_in_flight)
    return run.results(ordered)


class _Run:
    """One ``map()``: the shared input, the token queue, the result queue and the workers."""

    def __init__(self, client: Client, items: Iterator[MapItem], width: int) -> None:
        self.client = client
        self.items = items
        self.items_lock = threading.Lock()
        self.counter = itertools.count()
        self.exhausted = False
        self.input_error: BaseException | None = None
        self.tokens: queue.SimpleQueue[object] = queue.SimpleQueue()
        for _ in range(width):
            self.tokens.put(None)
        self.out: queue.SimpleQueue[tuple[int, Any, Any]] = queue.SimpleQueue()
        self.stopping = False
        self.calls: dict[int, RealCall] = {}
        self.calls_lock = threading.Lock()  # also guards ``workers`` and ``taking``
        self.width = width
        self.workers: list[threading.Thread] = []
        self.taking = 0  # workers between runs: waiting for a token or taking an item
        self.started = False

    # -- workers --------------------------------------------------------------------------------

    def _next(self) -> tuple[int, MapItem] | None:
        with self.items_lock:
            if self.exhausted or self.stopping:
                return None
            try:
                item = next(self.items)
            except StopIteration:
                self.exhausted = True
                return None
            except BaseException as exc:  # noqa: BLE001 - the input's own failure, raised in the consumer
                self.exhausted = True
                self.input_error = exc
                return None
            return next(self.counter), item

    def _work(self) -> None:
        try:
            self._work_items()
        finally:  # whatever happens, the consumer hears that this worker is done
            self.out.put((-1, _END, None))

    def _grow_locked(self) -> None:
        """Under ``calls_lock``: start a worker to take the next item (counted as taking until it has)."""
        worker = threading.Thread(target=self._work, name=f"fastnet-map-{len(self.workers)}", daemon=True)
        worker.start()  # may raise (no thread to be had): then it was never counted
        self.workers.append(worker)
        self.taking += 1

    def _work_items(self) -> None:
        while True:
            self.tokens.get()
            taken = self._next()
            with self.calls_lock:
                self.taking -= 1
                if taken is not None and not self.taking and len(self.workers) < self.width:
                    if not self.stopping and not self.exhausted:
                        try:
                            self._grow_locked()  # nobody else is ready for the next item
                        except RuntimeError:  # no thread to be had: the workers there are go on
                            pass
            if taken is None:
                return
            index, item = taken
            outcome = self._outcome(index, item)
            with self.calls_lock:
                self.taking += 1
            self.out.put((index, item, outcome))
            outcome = None  # this thread keeps nothing of it while it waits for the next item

    def _outcome(self, index: int, item: MapItem) -> Any:
        """Run one item's request to the end of its body: the response, or the exception."""
        client = self.client
        try:
            request = item if isinstance(item, Request) else client.build_request("GET", item)
            call = client.new_call(request)
        except Exception as exc:  # a bad URL or request: that item's outcome
            return exc
        with self.calls_lock:
            if self.stopping:
                # _stop() took its list of calls to cancel before this one was registered
                call.cancel()
            self.calls[index] = call
        try:
            response = call.execute()
            if response._source is not None:
                try:
                    response.read()
                except BaseException:
                    response.close()
                    raise
            return response
        except Exception as exc:  # noqa: BLE001 - network failures and the like are results
            return exc
        finally:
            with self.calls_lock:
                self.calls.pop(index, None)

    # -- the consumer ---------------------------------------------------------------------------

    def results(self, ordered: bool) -> Iterator[tuple[MapItem, Response | Exception]]:
        with self.calls_lock:
            self._grow_locked()
        self.started = True
        ended = 0
        pending: dict[int, tuple[Any, Any]] = {}
        expected = 0
        try:
            # a worker starts the next one before it reports its own end: none is missed
            while ended < len(self.workers):
                index, item, outcome = self.out.get()
                if item is _END:
                    ended += 1
                    continue
                # yielded straight from ``pending``: no local keeps a result once it was handed over
                pending[index] = (item, outcome)
                item = outcome = None
                if not ordered:
                    self.tokens.put(None)
                    yield pending.pop(index)
                    continue
                while expected in pending:
                    expected += 1
                    self.tokens.put(None)
                    yield pending.pop(expected - 1)
            # every worker ended: the ordered buffer is empty unless an index was skipped
            for index in sorted(pending):
                yield pending.pop(index)
            if self.input_error is not None:
                raise self.input_error
        finally:
            self._stop(pending)

    def _stop(self, pending: dict[int, tuple[Any, Any]]) -> None:
        """Leave cleanly: no new items, cancel what runs, join the workers, close unclaimed responses."""
        if not self.started:
            return
        # Not under items_lock: a worker may be blocked inside the input's next() holding it. An item
        # taken after this is canceled when its call is registered (under calls_lock, like this).
        with self.calls_lock:
            self.stopping = True  # no worker starts after this
            calls = list(self.calls.values())
            workers = list(self.workers)
        for call in calls:
            call.cancel()
        for _ in workers:
            self.tokens.put(None)  # wake any worker waiting for a token: it will find stopping set
        deadline = time.monotonic() + _JOIN_SECONDS
        for worker in workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        leftovers = list(pending.values())
        while True:
            try:
                _index, item, outcome = self.out.get_nowait()
            except queue.Empty:
                break
            if item is not _END:
                leftovers.append((item, outcome))
        for _item, outcome in leftovers:
            close = getattr(outcome, "close", None)
            if close is not None:
                close()
