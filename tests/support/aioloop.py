"""Strict event loops for asyncio tests: the default loop and uvloop, and what a test may not leave behind.

``aio`` is a fixture parametrized over the loop kinds (``"asyncio"``: the standard library's default
loop; ``"uvloop"``); a test module imports it (as ``aio_fixture``, the name it is defined under, so a
test's ``aio`` argument does not shadow an import) and a test hands it a coroutine::

    from tests.support.aioloop import aio_fixture  # noqa: F401  (the fixture "aio")

    def test_something(aio):
        async def main():
            assert await resolver.alookup("app.test") == ["127.0.0.1"]

        aio.run(main())

Each ``run`` gets a fresh loop whose exception handler records everything the loop would log ("Task
exception was never retrieved", "Future exception was never retrieved", "Task was destroyed but it is
pending", errors in callbacks) and which turns unraisable exceptions (a ``ResourceWarning`` from an
unclosed transport or socket, "coroutine ... was never awaited") into failures too. When the coroutine
has returned, the loop must have no task left that is not done; a few loop iterations then let closed
transports finish closing, the garbage collector runs, and anything recorded fails the test.

uvloop is part of the test extras; where it is not installed its runs are skipped (a failure with
``FASTNET_REQUIRE_UVLOOP=1``).

``client_sockets(port)`` lists this process's sockets connected to ``port`` (from ``/proc``), and
``wait_closed(port)`` waits, a bounded number of loop iterations, until there are none: what a test of
cancellation asserts, without any mock of the network layer.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import warnings
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from fastnet import _compat

__all__ = [
    "LOOP_KINDS",
    "LoopRunner",
    "aio_fixture",
    "both",
    "client_sockets",
    "new_loop",
    "wait_closed",
    "wait_for",
]

T = TypeVar("T")

LOOP_KINDS = ("asyncio", "uvloop")


def new_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new event loop of ``kind`` (``"asyncio"`` or ``"uvloop"``); skips when uvloop is missing."""
    if kind == "uvloop":
        try:
            import uvloop
        except ImportError:
            if _compat.env_flag("FASTNET_REQUIRE_UVLOOP"):
                raise
            pytest.skip("uvloop is not installed")
        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        return loop
    return asyncio.new_event_loop()


class LoopRunner:
    """Runs coroutines on fresh loops of one kind and fails on anything they leave behind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.problems: list[str] = []

    def _handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        self.problems.append(f"{context.get('message')}: {exc!r}" if exc is not None else str(context))

    def _unraisable(self, info: Any) -> None:
        self.problems.append(f"unraisable: {info.exc_value!r} in {info.object!r}")

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` to the end on a new loop (at most ``timeout`` seconds) and check the loop.

        Warnings are recorded rather than raised (and each one fails the test): raised inside the loop's
        own machinery, a ``ResourceWarning`` for a leaked uvloop transport makes ``loop.close()`` hang."""
        loop = new_loop(self.kind)
        loop.set_exception_handler(self._handler)
        saved_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    result = self._run(loop, coro, timeout)
                finally:
                    gc.collect()  # never-retrieved errors and pending tasks are reported when collected
            self.problems.extend(f"warning: {w.category.__name__}: {w.message}" for w in caught)
        finally:
            sys.unraisablehook = saved_hook
        if self.problems:
            problems, self.problems = self.problems, []
            pytest.fail(f"the {self.kind} loop reported:\n  " + "\n  ".join(problems), pytrace=False)
        return result

    def _run(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        asyncio.set_event_loop(loop)
        try:
            result = loop.run_until_complete(asyncio.wait_for(coro, timeout))
            left = [t for t in asyncio.all_tasks(loop) if not t.done()]
            if left:
                self.problems.append(f"tasks still pending after the test: {left!r}")
                for task in left:
                    task.cancel()
                loop.run_until_complete(asyncio.wait(left, timeout=10))
            for _ in range(5):  # closed transports finish closing in the next iterations
                loop.run_until_complete(asyncio.sleep(0))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
        return result


@pytest.fixture(params=LOOP_KINDS, name="aio")
def aio_fixture(request: pytest.FixtureRequest) -> Iterator[LoopRunner]:
    """A :class:`LoopRunner` for the default asyncio loop, then (a second run) for uvloop."""
    if request.param == "uvloop":
        new_loop("uvloop").close()  # skips here, before the test body, when uvloop is missing
    yield LoopRunner(request.param)


def _socket_inodes() -> set[int]:
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def client_sockets(port: int, kind: str | None = None) -> list[tuple[str, int]]:
    """This process's open sockets whose remote port is ``port``, as ``(table, inode)``; ``kind`` "tcp" or
    "udp" limits the tables read. A server's own sockets never match (their *local* port is ``port``)."""
    if not os.path.isdir("/proc/self/fd"):  # pragma: no cover - Linux only
        pytest.skip("needs /proc")
    mine = _socket_inodes()
    found: list[tuple[str, int]] = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        if kind is not None and not table.startswith(kind):
            continue
        try:
            with open(f"/proc/net/{table}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            inode = int(fields[9])
            if remote_port == port and inode in mine:
                found.append((table, inode))
    return found


async def wait_closed(port: int, iterations: int = 50) -> None:
    """Let the loop run (``iterations`` short steps at most) until no socket of ours is connected to
    ``port``; fail if one still is."""
    for _ in range(iterations):
        if not client_sockets(port):
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"sockets to port {port} still open: {client_sockets(port)}", pytrace=False)


async def wait_for(predicate: Any, seconds: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate()`` on the loop until it is true (a bounded wait for an event on another side,
    such as a server receiving a query); fail after ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}", pytrace=False)
        await asyncio.sleep(0.005)


async def both(sync_call: Any, async_call: Any, *args: Any) -> tuple[str, Any]:
    """Call the blocking and the asyncio form of a lookup; assert they give the same result or the same
    error, and return it: ``("ok", result)`` or ``(error class name, message)``."""
    try:
        expected = ("ok", sync_call(*args))
    except Exception as exc:  # noqa: BLE001 - compared
        expected = (type(exc).__name__, str(exc))
    try:
        got = ("ok", await async_call(*args))
    except Exception as exc:  # noqa: BLE001
        got = (type(exc).__name__, str(exc))
    assert got == expected
    return got
