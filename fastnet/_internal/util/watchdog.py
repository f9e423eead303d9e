"""The whole-call deadline: one daemon thread that cancels calls whose ``call_timeout`` has passed.

Calls register themselves with their absolute deadline (``time.monotonic()``); the thread sleeps until
the earliest one (not a busy loop: a heap and a condition variable) and cancels the call, which closes
its socket so a blocked read fails at once. A call that finished sets its deadline to -1 and is
skipped when its turn comes (lazy deletion keeps registration O(log n)).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:

    class Watched(Protocol):
        """A call as the watchdog sees it: its deadline, and how it is canceled as timed out."""

        deadline: float
        timed_out: bool

        def cancel(self) -> None: ...


__all__ = ["Watchdog"]


class Watchdog:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watched]] = []
        self._cond = threading.Condition()
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, call: Watched) -> None:
        with self._cond:
            heapq.heappush(self._heap, (call.deadline, next(self._counter), call))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fastnet-watchdog", daemon=True)
                self._thread.start()
            if self._heap[0][2] is call:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._heap:
                        self._cond.wait(30.0)
                        continue
                    deadline, _, call = self._heap[0]
                    if call.deadline != deadline:  # finished, or re-armed
                        heapq.heappop(self._heap)
                        continue
                    now = time.monotonic()
                    if deadline <= now:
                        heapq.heappop(self._heap)
                        break
                    self._cond.wait(deadline - now)
            call.timed_out = True
            try:
                call.cancel()
            except Exception:  # noqa: BLE001 - a listener that raises must not kill the watchdog
                pass
